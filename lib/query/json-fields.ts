import type { ViewsetDialect } from '../dialect/dialect.js'
import { LruCache } from '../execution/lru-cache.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { namesPattern } from '../schema/list-patterns.js'
import { isRecord } from '../schema/object-schema.js'
import { queryParameterError } from './condition.js'
import { nameList } from './field-types.js'
import type { FieldSelection, FieldsPlan } from './fields.js'
import { maxFieldSets } from './fields.js'
import type { JsonPath } from './json-paths.js'
import { declaredJsonPaths, isJsonPath } from './json-paths.js'

// `?fields=id,meta->color` on LIST and GET: a JSON path declared in `filterFields` or `orderingFields` is answered
// inside its column's object (`{"id":1,"meta":{"color":"red"}}`). The statement reads the column (as `?fields=meta`
// would) and the answer keeps only the named keys, written by the column's own schema: nothing outside it is served.

/** The keys each projected column keeps, by column. */
type Projection = ReadonlyMap<string, ReadonlyArray<readonly string[]>>

/** A column's value as a document: parsed where the driver answers JSON as text (SQLite), else as it is. */
function documentOf (value: unknown): unknown {
  if (typeof value !== 'string') return value
  try {
    return JSON.parse(value)
  } catch {
    return undefined
  }
}

/** The value at `keys` of a document, or `undefined` where a key is missing. */
function valueAt (document: unknown, keys: readonly string[]): unknown {
  let current = document
  for (const key of keys) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined
    current = current[key]
  }
  return current
}

/** A document with only the values at `paths`, nested as they were; a missing key is absent. */
function picked (document: unknown, paths: ReadonlyArray<readonly string[]>): unknown {
  if (!isRecord(document)) return document ?? null
  const kept: Record<string, unknown> = {}
  for (const keys of paths) {
    const value = valueAt(document, keys)
    if (value === undefined) continue
    let target = kept
    for (const key of keys.slice(0, -1)) {
      const inner = target[key]
      target = isRecord(inner) ? inner : (target[key] = {})
    }
    target[keys[keys.length - 1] ?? ''] = value
  }
  return kept
}

/** A row with each projected column cut down to its named keys (a copy: the row itself is left as read). */
function projected (row: unknown, projection: Projection): unknown {
  if (!isRecord(row)) return row
  const copy: Record<string, unknown> = { ...row }
  for (const [column, paths] of projection) {
    if (column in copy) copy[column] = picked(documentOf(copy[column]), paths)
  }
  return copy
}

/** The selection of a `fields` text that names JSON paths: the base selection of their columns, projected. */
function pathSelection (
  plan: FieldsPlan,
  text: string,
  paths: ReadonlyMap<string, JsonPath>,
  allowed: readonly string[]
): FieldSelection | undefined {
  const asked = text.split(',')
  const projection = new Map<string, Array<readonly string[]>>()
  const plain: string[] = []
  for (const name of asked) {
    const path = paths.get(name)
    if (path === undefined) {
      if (isJsonPath(name)) {
        const message = `names an unknown field ${JSON.stringify(name)}; allowed: ${nameList(allowed)}`
        throw queryParameterError('fields', message)
      }
      plain.push(name)
    } else if (!asked.includes(path.column)) {
      projection.set(path.column, [...projection.get(path.column) ?? [], path.keys])
    }
  }
  const base = plan.selection({ fields: [...new Set([...plain, ...projection.keys()])].join(',') })
  if (base === undefined || projection.size === 0) return base
  return {
    ...base,
    serialize: (payload) =>
      base.serialize(Array.isArray(payload) ? payload.map((row) => projected(row, projection)) : payload),
    serializeRow: (payload) => base.serializeRow(projected(payload, projection)),
  }
}

/**
 * LIST's and GET's `?fields=` with the JSON `paths` its options declare: a path is answered inside its column's
 * object, the other names as `plan` answers them. A path whose column `entity` lacks (hidden from the caller) is an
 * unknown name.
 *
 * @example
 * ```ts
 * const fields = withJsonPaths(planFields(entity, columns, columns), paths, entity)
 * fields.selection({ fields: 'id,meta->color' }) // reads id and meta, serves {"id":1,"meta":{"color":"red"}}
 * ```
 */
export function withJsonPaths (plan: FieldsPlan, paths: ReadonlyMap<string, JsonPath>, entity: JsonSchema): FieldsPlan {
  const properties = propertiesOf(entity)
  const served = new Map([...paths].filter(([, path]) => Object.hasOwn(properties, path.column)))
  if (served.size === 0) return plan
  const allowed = [...Object.keys(properties), ...served.keys()]
  const documented = plan.properties.fields ?? {}
  const selections = new LruCache<string, FieldSelection>(maxFieldSets)
  return {
    defaultRelations: plan.defaultRelations,
    properties: {
      fields: {
        ...documented,
        pattern: namesPattern(allowed),
        description: `${String(documented.description ?? '')} JSON paths (${nameList(served.keys())}) are answered ` +
          'inside their column\'s object, a missing key absent.',
      },
    },
    selection (query) {
      const text = query.fields
      if (typeof text !== 'string' || !text.includes('->')) return plan.selection(query)
      const known = selections.get(text)
      if (known !== undefined) return known
      const selection = pathSelection(plan, text, served, allowed)
      if (selection !== undefined) selections.set(text, selection)
      return selection
    },
  }
}

/** What {@link withDeclaredPaths} reads of a viewset: the options declaring paths, the whole entity typing them. */
export interface DeclaredPathsSource {
  readonly options: { readonly filterFields?: unknown, readonly orderingFields?: unknown }
  readonly entity: JsonSchema
  readonly columns: readonly string[]
  readonly dialect: Pick<ViewsetDialect, 'syntax'>
}

/**
 * `?fields=` of GET and LIST with the JSON paths the options declare ({@link withJsonPaths}): the paths typed by the
 * whole entity, the answers by `served` (the serializer's schema the plan was compiled from, or a caller's narrower
 * one, where a hidden column's paths are unknown names).
 *
 * @example
 * ```ts
 * const source = { options, entity, columns, dialect }
 * const fields = withDeclaredPaths(planFields(served, columns, selected), source, served)
 * ```
 */
export function withDeclaredPaths (plan: FieldsPlan, source: DeclaredPathsSource, served: JsonSchema): FieldsPlan {
  const paths = declaredJsonPaths(source.options, propertiesOf(source.entity), source.columns, source.dialect)
  return withJsonPaths(plan, paths, served)
}
