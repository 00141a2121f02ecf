import { invalidOption } from '../errors.js'
import type { ColumnKind } from '../dialect/shared/column-types.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { isList, isRecord } from '../schema/object-schema.js'
import { namesPattern, sortKeysPattern } from '../schema/list-patterns.js'
import { aggregateFunctions } from './aggregate-options.js'
import type { AggregateFunction } from './aggregate-options.js'
import type { ScalarField, ScalarType } from './field-types.js'
import { nameList, scalarFields } from './field-types.js'
import type { RelatedPath, RelatedRoot } from './related-paths.js'
import { resolvePath } from './related-paths.js'

// AGGREGATE planned once at mounting, from `groupByFields` and `aggregateFields`: which names a request may group
// by and aggregate, checked against the schema, the to-one relations and the column types, and the query string
// and the response that follow. A request is parsed against it in query/aggregate-query.ts.

/** One name `group_by` may hold: a scalar field, or a path through to-one relations (`author.name`). */
export interface GroupField {
  readonly name: string
  /** The field's own type and schema (the related schema's, for a path). */
  readonly field: ScalarField
  readonly path?: RelatedPath
}

/** One function of one field: what `?sum=price` names. */
export interface MetricField {
  readonly fn: AggregateFunction
  readonly name: string
  readonly field: ScalarField
  /** Served as a string (a DECIMAL or BIGINT column): read back as text, so its digits stay exact. */
  readonly text: boolean
}

/** What AGGREGATE is planned from, at mounting. */
export interface AggregateSource {
  /** The entity as served. */
  readonly entity: JsonSchema
  /** The schema fields that are columns. */
  readonly columns: readonly string[]
  /** The kind of each column (its catalog type read by the dialect): which fields are numeric. */
  readonly kinds: ReadonlyMap<string, ColumnKind>
  readonly related: RelatedRoot | undefined
  readonly options: { readonly groupByFields?: unknown; readonly aggregateFields?: unknown }
  /** LIST's query string: AGGREGATE takes its filters, groups, search and paging. */
  readonly listQuerystring: JsonSchema
}

/** AGGREGATE, planned: the names a request may use, its query string and its response. */
export interface AggregatePlan {
  readonly groups: ReadonlyMap<string, GroupField>
  /** By `fn.name` (`sum.price`), as `order_by` names them. */
  readonly metrics: ReadonlyMap<string, MetricField>
  readonly querystring: JsonSchema
  /** One group, as the 200's array holds it. */
  readonly group: JsonSchema
  /**
   * The query string of a caller who may name only what `visible` admits (field rules), over LIST's query string
   * as narrowed for that caller.
   */
  querystringFor(listQuerystring: JsonSchema, visible: (name: string) => boolean): JsonSchema
}

/** LIST's parameters AGGREGATE does not take: it has its own `count` and `order_by`, and serves no rows. */
const listOnly = new Set(['fields', 'order_by', 'count'])

const numericKinds: ReadonlySet<ColumnKind> = new Set(['integer', 'bigint', 'number', 'decimal'])

/** Checks `groupByFields`: scalar fields of the schema and to-one relation paths, each once. */
function plannedGroups (source: AggregateSource, fields: ReadonlyMap<string, ScalarField>): Map<string, GroupField> {
  const groups = new Map<string, GroupField>()
  const option = source.options.groupByFields
  if (option === undefined) return groups
  if (!isList(option)) invalidOption('groupByFields', `expected an array of fields (${nameList(fields.keys())})`)
  for (const name of option) {
    if (typeof name !== 'string') invalidOption('groupByFields', `${JSON.stringify(name)} is not a field name`)
    if (groups.has(name)) invalidOption('groupByFields', `"${name}" is listed twice`)
    if (name.includes('.') && source.related !== undefined) {
      const path = resolvePath('groupByFields', name, source.related, true)
      groups.set(name, { name, field: { ...path.field, nullable: true }, path })
      continue
    }
    const field = fields.get(name)
    if (field === undefined) {
      invalidOption('groupByFields', `"${name}" is not a scalar column of the schema (${nameList(fields.keys())})`)
    }
    groups.set(name, { name, field })
  }
  return groups
}

/** Checks `aggregateFields`: numeric fields, each with known functions, none twice. */
function plannedMetrics (source: AggregateSource, fields: ReadonlyMap<string, ScalarField>): Map<string, MetricField> {
  const metrics = new Map<string, MetricField>()
  const option = source.options.aggregateFields
  if (option === undefined) return metrics
  if (!isRecord(option)) invalidOption('aggregateFields', 'expected an object such as { price: [\'sum\', \'avg\'] }')
  for (const [name, functions] of Object.entries(option)) {
    const field = fields.get(name)
    const kind = source.kinds.get(name)
    if (field === undefined || kind === undefined) {
      invalidOption('aggregateFields', `"${name}" is not a scalar column of the schema (${nameList(fields.keys())})`)
    }
    const numeric = numericKinds.has(kind) && (field.type === 'integer' || field.type === 'number' ||
      (field.type === 'string' && kind !== 'integer'))
    if (!numeric) {
      invalidOption('aggregateFields', `"${name}" is not numeric (its column is ${kind}, its field ${field.type})`)
    }
    if (!isList(functions) || functions.length === 0) {
      invalidOption('aggregateFields', `${name}: expected a non-empty array of ${aggregateFunctions.join(', ')}`)
    }
    for (const fn of functions) {
      const known = aggregateFunctions.find((candidate) => candidate === fn)
      if (known === undefined) {
        const allowed = aggregateFunctions.join(', ')
        invalidOption('aggregateFields', `${name}: unknown function ${JSON.stringify(fn)} (${allowed})`)
      }
      if (metrics.has(`${known}.${name}`)) invalidOption('aggregateFields', `${name}: "${known}" is listed twice`)
      metrics.set(`${known}.${name}`, { fn: known, name, field, text: field.type === 'string' })
    }
  }
  return metrics
}

/** The JSON type a metric answers in: avg a number; sum, min and max the field's own (a string stays a string). */
export function metricType (metric: MetricField): ScalarType {
  if (metric.fn === 'avg') return 'number'
  return metric.field.type
}

/** A metric's value in a group: its field's schema (without bounds: a sum passes them), or NULL over no rows. */
function metricSchema (metric: MetricField): JsonSchema {
  const type = metricType(metric)
  return { type: [type, 'null'] }
}

/** The keys of groups, nested by relation: `author.name` is `{ author: { name } }`, `author` NULL with no author. */
function keysSchema (keys: ReadonlyArray<{ readonly segments: readonly string[]; readonly schema: JsonSchema }>) {
  const properties: Record<string, JsonSchema> = {}
  const nested = new Map<string, Array<{ segments: readonly string[]; schema: JsonSchema }>>()
  for (const { segments, schema } of keys) {
    const [first = '', ...rest] = segments
    if (rest.length === 0) properties[first] = schema
    else nested.set(first, [...(nested.get(first) ?? []), { segments: rest, schema }])
  }
  for (const [name, inner] of nested) {
    const object = { type: 'object', properties: keysSchema(inner), additionalProperties: false }
    properties[name] = { anyOf: [object, { type: 'null' }] }
  }
  return properties
}

/** A group as the 200 holds it: its keys (a path nested, NULL when the relation is), its count and its metrics. */
function groupSchema (groups: ReadonlyMap<string, GroupField>, metrics: ReadonlyMap<string, MetricField>): JsonSchema {
  const properties = keysSchema([...groups.values()].map(({ name, field }) => ({
    segments: name.split('.'),
    schema: field.nullable ? { anyOf: [field.schema, { type: 'null' }] } : field.schema,
  })))
  properties.count = { type: 'integer', minimum: 0, description: 'The rows of the group (with `count=true`)' }
  for (const fn of aggregateFunctions) {
    const some = [...metrics.values()].filter((metric) => metric.fn === fn)
    if (some.length === 0) continue
    properties[fn] = {
      type: 'object',
      properties: Object.fromEntries(some.map((metric) => [metric.name, metricSchema(metric)])),
      description: `${fn} of each field named in \`${fn}=\``,
    }
  }
  return { type: 'object', properties, additionalProperties: false }
}

/** AGGREGATE's own parameters, for the names `visible` admits. */
function ownParameters (plan: Pick<AggregatePlan, 'groups' | 'metrics'>, visible: (name: string) => boolean) {
  const properties: Record<string, JsonSchema> = {}
  const groups = [...plan.groups.keys()].filter(visible)
  if (groups.length > 0) {
    properties.group_by = {
      type: 'string',
      pattern: namesPattern(groups),
      description: `Comma-separated fields to group the rows by (${groups.join(', ')}); without it, one group`,
      examples: [groups.join(',')],
    }
  }
  properties.count = { type: 'boolean', description: 'When true, each group has `count`, its number of rows' }
  const metrics = [...plan.metrics.values()].filter((metric) => visible(metric.name))
  for (const fn of aggregateFunctions) {
    const names = metrics.filter((metric) => metric.fn === fn).map((metric) => metric.name)
    if (names.length === 0) continue
    properties[fn] = {
      type: 'string',
      pattern: namesPattern(names),
      description: `Comma-separated fields whose ${fn} each group has (${names.join(', ')})`,
      examples: [names.join(',')],
    }
  }
  const keys = [...groups, 'count', ...metrics.map((metric) => `${metric.fn}.${metric.name}`)]
  properties.order_by = {
    type: 'string',
    minLength: 1,
    pattern: sortKeysPattern(keys),
    description: 'Comma-separated sort keys (`-` descending): a field of `group_by`, `count`, or a function and ' +
      'its field (`sum.price`). Ties are ordered by the group keys, ascending; the default order is the group keys.',
    examples: ['-count'],
  }
  return properties
}

/** The query string of AGGREGATE: LIST's filters, search and paging, and its own parameters. */
function querystringOf (
  plan: Pick<AggregatePlan, 'groups' | 'metrics'>,
  listQuerystring: JsonSchema,
  visible: (name: string) => boolean
): JsonSchema {
  const shared = Object.entries(propertiesOf(listQuerystring)).filter(([name]) => !listOnly.has(name))
  return {
    type: 'object',
    properties: { ...Object.fromEntries(shared), ...ownParameters(plan, visible) },
    additionalProperties: false,
  }
}

/**
 * Plans AGGREGATE from the checked options: a name `groupByFields` or `aggregateFields` cannot use fails with
 * `FST_VIEWSET_INVALID_OPTION` naming the option and the name, at startup.
 *
 * @example
 * ```ts
 * const plan = planAggregate({ entity, columns, kinds, related, options, listQuerystring })
 * ```
 */
export function planAggregate (source: AggregateSource): AggregatePlan {
  const fields = scalarFields(propertiesOf(source.entity), source.columns)
  const groups = plannedGroups(source, fields)
  const metrics = plannedMetrics(source, fields)
  const named = { groups, metrics }
  return {
    groups,
    metrics,
    querystring: querystringOf(named, source.listQuerystring, () => true),
    group: groupSchema(groups, metrics),
    querystringFor: (listQuerystring, visible) => querystringOf(named, listQuerystring, visible),
  }
}

/**
 * Fails at startup when `groupByFields` or `aggregateFields` is given to a viewset that does not register AGGREGATE:
 * the options would do nothing.
 */
export function checkAggregateOptions (options: AggregateSource['options'], registered: boolean): void {
  if (registered) return
  for (const option of ['groupByFields', 'aggregateFields'] as const) {
    if (options[option] !== undefined) {
      invalidOption(option, 'is set, but methods does not list \'AGGREGATE\' (GET {prefix}/aggregate)')
    }
  }
}
