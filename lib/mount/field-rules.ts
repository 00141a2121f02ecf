import type { ViewsetDialect } from '../dialect/dialect.js'
import { FieldHiding } from '../http/field-hiding.js'
import type { ResolvedOptions, ViewsetOptions } from '../options.js'
import { FieldRules } from '../query/field-access.js'
import type { FieldAccessFunction } from '../query/field-access.js'
import { planFields } from '../query/fields.js'
import { withDeclaredPaths } from '../query/json-fields.js'
import { createListPlan } from '../query/list.js'
import type { ListPlan } from '../query/list.js'
import type { AggregatePlan } from '../query/aggregate.js'
import type { RelatedRoot } from '../query/related-paths.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveSerializerSchema, propertiesOf } from '../schema/derive.js'
import { isList, isRecord } from '../schema/object-schema.js'

// Mounting the field rules of a viewset (`fieldAccess`): its normalized rule, and the plans a request whose caller
// may not name some fields is validated and parsed against: LIST and `?fields=` planned again without those names.

/** What building a viewset's field hiding reads, once its entity, LIST and relations are planned. */
export interface FieldRulesSource {
  readonly fieldAccess: FieldAccessFunction | undefined
  /** What tells two viewsets' field rules apart: the option, else the viewset's class. */
  readonly identity: object
  readonly dialect: ViewsetDialect
  readonly resolved: ResolvedOptions
  readonly options: Pick<
    ViewsetOptions<unknown, never, never>,
    'searchFields' | 'orderingFields' | 'defaultOrder' | 'filterFields' | 'fullText' | 'groupByFields'
  >
  readonly entity: JsonSchema
  readonly columns: readonly string[]
  readonly selected: readonly string[]
  readonly relationKeys: ReadonlyMap<string, string>
  readonly defaultRelations: ReadonlySet<string> | undefined
  readonly related: RelatedRoot
  readonly list: ListPlan
  /** LIST's query string as the route validates it (`listQuery` merged in). */
  readonly listQuerystring: JsonSchema
  /** AGGREGATE's plan, when the viewset registers it: its query string is narrowed as LIST's is. */
  readonly aggregate?: AggregatePlan | undefined
}

/** The dotted names (`project.name`) the LIST options let a client send. */
function dottedNames (
  { filterFields, orderingFields, searchFields, groupByFields }: FieldRulesSource['options']
): string[] {
  const names = [
    ...(isList(groupByFields) ? groupByFields : []),
    ...Object.keys(isRecord(filterFields) ? filterFields : {}),
    ...(isList(orderingFields) ? orderingFields : []),
    ...(isList(searchFields) ? searchFields : []),
  ]
  return [...new Set(names.filter((name): name is string => typeof name === 'string' && name.includes('.')))]
}

/** The LIST options without the names a caller may not use (an emptied list is no list, as if never given). */
function visibleOptions (
  options: FieldRulesSource['options'],
  visible: (name: string) => boolean
): FieldRulesSource['options'] {
  const kept = (list: unknown) => {
    const names = isList(list) ? list.filter((name): name is string => typeof name === 'string' && visible(name)) : []
    return names.length === 0 ? undefined : names
  }
  const { filterFields, defaultOrder } = options
  const filters = isRecord(filterFields)
    ? Object.fromEntries(Object.entries(filterFields).filter(([name]) => visible(name)))
    : undefined
  // A default order on a hidden field would sort (and write cursors) by it: the key's order stands in.
  const ordered = typeof defaultOrder === 'string' &&
    defaultOrder.split(',').every((key) => visible(key.trim().replace(/^-/, '')))
  const orderingFields = kept(options.orderingFields)
  const searchFields = kept(options.searchFields)
  // One index searches all its fields at once: q would tell a hidden field's words, so it is unknown to that caller.
  const { fullText } = options
  const searchable = fullText !== undefined && fullText.fields.every(visible)
  return {
    ...(searchable ? { fullText } : {}),
    ...(filters === undefined ? {} : { filterFields: filters }),
    ...(orderingFields === undefined ? {} : { orderingFields }),
    ...(searchFields === undefined ? {} : { searchFields }),
    ...(ordered ? { defaultOrder } : {}),
  }
}

/**
 * The field hiding of a viewset's routes: `undefined` when it has no field rule and no relation path that could
 * reach a table with one (then its requests pay nothing for the feature). With `rules` (the viewset's own, also
 * what other viewsets' relations apply).
 *
 * @example
 * ```ts
 * const { rules, hiding } = fieldRulesOf(source)
 * ```
 */
export function fieldRulesOf (
  source: FieldRulesSource
): { rules: FieldRules | undefined, hiding: FieldHiding | undefined } {
  const { fieldAccess, entity, resolved } = source
  const fields = Object.keys(propertiesOf(entity))
  const rules = fieldAccess === undefined
    ? undefined
    : new FieldRules(fieldAccess, source.identity, fields, resolved.keyColumns ?? [resolved.primaryKey])
  const paths = dottedNames(source.options)
  if (rules === undefined && paths.length === 0) return { rules, hiding: undefined }
  const fieldsPlan = (narrow: JsonSchema) => {
    const names = Object.keys(propertiesOf(narrow))
    const relations = source.defaultRelations === undefined
      ? undefined
      : new Set([...source.defaultRelations].filter((name) => names.includes(name)))
    const served = servedSchema(deriveSerializerSchema(narrow), resolved.keyColumns ?? [resolved.primaryKey], true)
    return withDeclaredPaths(planFields(served, source.columns, source.selected, source.relationKeys, relations),
      source, served)
  }
  const hiding = new FieldHiding({
    rules,
    entity,
    root: source.related,
    paths,
    listQuerystring: source.listQuerystring,
    planned: source.list.querystring,
    maxBulk: resolved.maxBulk,
    primaryKey: resolved.keyColumns ?? resolved.primaryKey,
    fields: fieldsPlan,
    aggregate: source.aggregate?.querystringFor,
    list: (narrow, visible) => createListPlan({
      dialect: source.dialect,
      resolved,
      options: visibleOptions(source.options, visible),
      entity: narrow,
      columns: source.columns,
      selected: source.selected,
      fieldsPlan: fieldsPlan(narrow),
      related: source.related,
    }),
  })
  return { rules, hiding }
}

/**
 * The response serializer's schema: related rows may lack the fields their tables' rules hide (so they require
 * nothing), and with a field rule of its own a row requires only its key.
 */
export function servedSchema (serialized: JsonSchema, key: readonly string[], ruled: boolean): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(propertiesOf(serialized))) properties[name] = optional(property)
  const required = serialized.required
  if (!wellFormedRequired(required)) return { ...serialized, properties }
  const listed = required ?? []
  return { ...serialized, properties, required: ruled ? listed.filter((name) => key.includes(name)) : listed }
}

/**
 * Whether `required` is what JSON Schema allows there (unique strings, or absent). One that is not is left in the
 * serializer's schema, whose check at mounting then fails naming it: the generated routes' validators, which would
 * have refused it too, compile on first use (schema/lazy-validator.ts).
 */
function wellFormedRequired (required: unknown): required is string[] | undefined {
  if (required === undefined) return true
  return Array.isArray(required) && required.every((name) => typeof name === 'string') &&
    new Set(required).size === required.length
}

/** A schema without `required` at any depth (but one that is not well formed). */
function optional (schema: JsonSchema): JsonSchema {
  const { required, ...rest } = schema
  const relaxed: JsonSchema = wellFormedRequired(required) ? { ...rest } : { ...rest, required }
  if (isRecord(schema.properties)) {
    relaxed.properties = Object.fromEntries(
      Object.entries(propertiesOf(schema)).map(([name, property]) => [name, optional(property)])
    )
  }
  if (isRecord(schema.items)) relaxed.items = optional(schema.items)
  if (Array.isArray(schema.anyOf)) {
    relaxed.anyOf = schema.anyOf.map((member: unknown) => (isRecord(member) ? optional(member) : member))
  }
  return relaxed
}

/** The viewset's field rule, when it has one (`fieldAccess` overridden or given), and what tells it apart. */
export function fieldRulesSource ({ overridden, fieldAccess, options, viewset }: {
  readonly overridden: ReadonlySet<string>
  readonly fieldAccess: FieldAccessFunction
  readonly options: Pick<ViewsetOptions<unknown, never, never>, 'fieldAccess'>
  readonly viewset: object
}) {
  return {
    fieldAccess: overridden.has('fieldAccess') ? fieldAccess : undefined,
    identity: options.fieldAccess ?? viewset.constructor,
  }
}
