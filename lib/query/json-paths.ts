import type { Expression } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { invalidOption } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import { isList, isRecord } from '../schema/object-schema.js'
import type { ScalarField } from './field-types.js'
import { nameList, scalarField } from './field-types.js'

// Paths inside a JSON column (`meta->color`, `meta->size->width`) that `filterFields` and `orderingFields` declare:
// each typed by the column's own schema down to a scalar, checked once at startup, and read in SQL through the
// dialect's `jsonScalar` (PostgreSQL `#>>` with a cast, MySQL/MariaDB `json_value`, SQLite `json_extract`). Only
// declared paths reach SQL, and their keys are identifiers: the allow-list is the options.

/** What separates a JSON column from its keys, and one key from the next, in a path's name. */
export const jsonPathSeparator = '->'

/** A key of a JSON path: an identifier, written into the SQL (never a client's text). */
const keyPattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** The deepest path: a column and at most this many keys. */
export const maxJsonKeys = 4

/** A path inside a JSON column, checked against the schema at startup. */
export interface JsonPath {
  /** As the options write it: `meta->color`. */
  readonly name: string
  /** The JSON column. */
  readonly column: string
  /** The keys from the column's document down to the scalar. */
  readonly keys: readonly string[]
  /** The scalar's type and schema, named as the path; always nullable (a missing key reads as NULL). */
  readonly field: ScalarField
  /** The scalar in SQL, as the dialect reads it. */
  readonly value: Expression<unknown>
}

/** Whether an option's name is a JSON path rather than a column or a relation path. */
export function isJsonPath (name: string): boolean {
  return name.includes(jsonPathSeparator)
}

/** The object schema a JSON value holds (`Type.Object`, or its union with `Type.Null()`), or `undefined`. */
function objectOf (schema: JsonSchema): JsonSchema | undefined {
  const { type } = schema
  if (isRecord(schema.properties) && (type === 'object' || (isList(type) && type.includes('object')))) return schema
  const union = schema.anyOf ?? schema.oneOf
  if (!isList(union)) return undefined
  const objects = union.filter(isRecord).flatMap((member): JsonSchema[] => {
    const object = objectOf(member)
    return object === undefined ? [] : [object]
  })
  const others = union.filter((member) => isRecord(member) && member.type !== 'null' && objectOf(member) === undefined)
  const [only] = objects
  return objects.length === 1 && others.length === 0 ? only : undefined
}

/** The schema at `keys` under an object schema, and where it stops being an object when it does. */
function schemaAt (
  root: JsonSchema,
  keys: readonly string[]
): { schema: JsonSchema } | { problem: string } {
  let current = root
  let walked = ''
  for (const key of keys) {
    const object = objectOf(current)
    if (object === undefined) return { problem: `${walked === '' ? 'the column' : `"${walked}"`} is not a JSON object` }
    const properties = isRecord(object.properties) ? object.properties : {}
    const next = Object.hasOwn(properties, key) ? properties[key] : undefined
    if (!isRecord(next)) {
      const where = walked === '' ? 'the column' : `"${walked}"`
      return { problem: `"${key}" is not a key of ${where}; keys: ${nameList(Object.keys(properties))}` }
    }
    walked = walked === '' ? key : `${walked}->${key}`
    current = next
  }
  return { schema: current }
}

/**
 * Checks a JSON path of `option` (`meta->color`) against the entity: a column whose schema is a JSON object, keys
 * that are identifiers and properties of it, down to a scalar (string, number, integer or boolean, possibly
 * nullable). Anything else fails the startup naming the path.
 *
 * @example
 * ```ts
 * const path = resolveJsonPath('filterFields', 'meta->color', properties, columns, dialect)
 * // { column: 'meta', keys: ['color'], field: { type: 'string', nullable: true, ... }, value: <json_extract(...)> }
 * ```
 */
export function resolveJsonPath (
  option: string,
  name: string,
  properties: Record<string, JsonSchema>,
  columns: readonly string[],
  dialect: Pick<ViewsetDialect, 'syntax'>
): JsonPath {
  const [column = '', ...keys] = name.split(jsonPathSeparator)
  const property = properties[column]
  if (!columns.includes(column) || property === undefined || objectOf(property) === undefined) {
    invalidOption(option, `"${name}": "${column}" is not a column of the schema holding a JSON object (Type.Object)`)
  }
  if (keys.length === 0 || keys.length > maxJsonKeys || !keys.every((key) => keyPattern.test(key))) {
    invalidOption(
      option,
      `"${name}": a JSON path is a column and 1 to ${maxJsonKeys} keys, each an identifier (letters, digits, _)`
    )
  }
  const reached = schemaAt(property, keys)
  if ('problem' in reached) invalidOption(option, `"${name}": ${reached.problem}`)
  const scalar = scalarField(name, reached.schema)
  if (scalar === undefined) {
    invalidOption(
      option,
      `"${name}" does not reach a scalar (string, number, integer or boolean) of the column's schema`
    )
  }
  const field: ScalarField = { ...scalar, nullable: true }
  return { name, column, keys, field, value: dialect.syntax.jsonScalar(column, keys, scalar.type) }
}

/**
 * The JSON paths the LIST options declare (`filterFields` keys and `orderingFields` entries holding `->`), each
 * checked once ({@link resolveJsonPath}), by name.
 */
export function declaredJsonPaths (
  options: { readonly filterFields?: unknown, readonly orderingFields?: unknown },
  properties: Record<string, JsonSchema>,
  columns: readonly string[],
  dialect: Pick<ViewsetDialect, 'syntax'>
): ReadonlyMap<string, JsonPath> {
  const paths = new Map<string, JsonPath>()
  const declare = (option: string, name: unknown): void => {
    if (typeof name !== 'string' || !isJsonPath(name) || paths.has(name)) return
    paths.set(name, resolveJsonPath(option, name, properties, columns, dialect))
  }
  const filterNames = isRecord(options.filterFields) ? Object.keys(options.filterFields) : []
  for (const name of filterNames) declare('filterFields', name)
  if (isList(options.orderingFields)) for (const name of options.orderingFields) declare('orderingFields', name)
  return paths
}
