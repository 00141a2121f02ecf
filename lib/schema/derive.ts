import { ReadonlyKind } from '@sinclair/typebox'
import type { TObject, TSchema } from '@sinclair/typebox'
import { isObjectSchema } from './object-schema.js'
import type { ColumnInfo } from '../dialect/dialect.js'
import { canonicalIntegerPattern } from './validator.js'
import { storableTextPattern } from './list-patterns.js'

/** A JSON Schema as plain data: TypeBox's symbols stripped, safe to copy and extend. */
export type JsonSchema = Record<string, unknown>

/** Copies a TypeBox schema to plain JSON Schema (TypeBox adds symbol keys that Ajv and OpenAPI do not need). */
export function plain<T extends TSchema | JsonSchema> (schema: T): JsonSchema {
  const copy: unknown = JSON.parse(JSON.stringify(schema))
  return isJsonSchema(copy) ? copy : {} // a copy of an object schema is an object
}

function isSchemaLike (value: unknown): value is Record<PropertyKey, unknown> {
  return typeof value === 'object' && value !== null
}

function isJsonSchema (value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The properties of an object schema, as plain schemas (a copy: the schema is not changed through it). */
export function propertiesOf (schema: TObject | JsonSchema): Record<string, JsonSchema> {
  const properties: unknown = schema.properties
  const copy: Record<string, JsonSchema> = {}
  if (!isJsonSchema(properties)) return copy
  for (const [name, property] of Object.entries(properties)) {
    if (isJsonSchema(property)) copy[name] = property
  }
  return copy
}

/** `readOnly: true` on the field, or on the union or any branch of it (a client may set none of them). */
export function isReadOnly (property: unknown): boolean {
  if (!isSchemaLike(property)) return false
  if (property.readOnly === true) return true
  const branches = Array.isArray(property.anyOf) ? property.anyOf : Array.isArray(property.oneOf) ? property.oneOf : []
  return branches.some(isReadOnly)
}

/**
 * `Type.Readonly(...)` and `Type.ReadonlyOptional(...)` mark a field with a TypeBox symbol only, which
 * {@link plain} drops: read it from the TypeBox schema, on the field or on a branch of its union.
 */
function hasReadonlyKind (property: unknown): boolean {
  if (!isSchemaLike(property)) return false
  if (property[ReadonlyKind] === 'Readonly') return true
  return Array.isArray(property.anyOf) && property.anyOf.some(hasReadonlyKind)
}

// Bounds of the integer columns the drivers hand to JavaScript as numbers: an id or a value outside
// them is a 400 from validation, never an error from the database.
const integerRanges: Record<string, [number, number]> = {
  int2: [-32768, 32767],
  smallint: [-32768, 32767],
  int4: [-2147483648, 2147483647],
  int: [-2147483648, 2147483647],
  mediumint: [-8388608, 8388607],
  tinyint: [-128, 127],
  serial: [-2147483648, 2147483647],
}
const safeRange: [number, number] = [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]

/**
 * The largest magnitude a single-precision column takes and serves back, per database: MySQL refuses more than
 * the largest float (3.4028234663852886e38), while PostgreSQL prints that float as `3.4028235e+38`, a larger
 * double, which an answer then carries (Prism flagged it against the smaller bound); PostgreSQL reads it back.
 */
const singleMax: Record<DialectName, number> = {
  sqlite: Number.MAX_VALUE,
  postgres: 3.4028235e38,
  mysql: 3.4028234663852886e38,
}

// The single-precision float columns of each database (SQLite's REAL and FLOAT are doubles, as are
// PostgreSQL's float8 and MySQL's double): a number field over one of them is bounded by ±singleMax.
const singleFloats: Record<DialectName, ReadonlySet<string>> = {
  sqlite: new Set(),
  postgres: new Set(['float4']),
  mysql: new Set(['float']),
}

/** The name of the database a schema is derived for. */
export type DialectName = 'sqlite' | 'postgres' | 'mysql'

/**
 * Half the smallest positive single-precision float (2^-150): PostgreSQL rounds a nonzero number no larger in
 * magnitude to 0 and refuses it as out of range for `real` (MySQL stores 0).
 */
const singleUnderflow = 2 ** -150

/**
 * What a number field over a PostgreSQL `real` must not be: a nonzero number within ±{@link singleUnderflow}.
 * `undefined` for other columns.
 */
function underflow (column: ColumnInfo | undefined, dialect: DialectName | undefined): JsonSchema | undefined {
  if (dialect !== 'postgres' || floatMax(column, dialect) === Number.MAX_VALUE) return undefined
  return { minimum: -singleUnderflow, maximum: singleUnderflow, not: { enum: [0] } }
}

/** The largest magnitude a number field over `column` can hold. */
function floatMax (column: ColumnInfo | undefined, dialect: DialectName | undefined): number {
  const type = column?.type.replace(/ unsigned$/, '')
  const single = type !== undefined && dialect !== undefined && singleFloats[dialect].has(type)
  return single ? singleMax[dialect] : Number.MAX_VALUE
}

/** Adds the column's bounds to an integer or number schema that declares none (nullable unions included). */
function boundIntegers (property: JsonSchema, column: ColumnInfo | undefined, dialect?: DialectName): JsonSchema {
  const range = (column === undefined ? undefined : integerRanges[column.type.replace(/ unsigned$/, '')]) ?? safeRange
  const max = floatMax(column, dialect)
  const tiny = underflow(column, dialect)
  const bound = (schema: JsonSchema): JsonSchema => {
    if (schema.type !== 'integer' && schema.type !== 'number') {
      return Array.isArray(schema.anyOf)
        ? { ...schema, anyOf: schema.anyOf.map((member: unknown) => (isJsonSchema(member) ? bound(member) : member)) }
        : schema
    }
    const bounded = { ...schema }
    if (bounded.minimum === undefined && bounded.exclusiveMinimum === undefined) {
      bounded.minimum = schema.type === 'integer' ? range[0] : -max
    }
    if (bounded.maximum === undefined && bounded.exclusiveMaximum === undefined) {
      bounded.maximum = schema.type === 'integer' ? range[1] : max
    }
    if (schema.type === 'number' && tiny !== undefined && bounded.not === undefined) bounded.not = tiny
    return bounded
  }
  return bound(property)
}

const integerColumn = /^(tiny|small|medium|big)?int(eger)?[248]?( unsigned)?$|^(big|small)?serial[248]?$/

/**
 * A string field over an integer column (a BIGINT served as `Type.String()`) gets the canonical integer
 * pattern, unless it has a pattern of its own: `0x1`, `1e0`, `+1`, `01` or a blank are not the number they
 * look like, in a URL or a body.
 */
function canonicalStrings (property: JsonSchema, column: ColumnInfo | undefined): JsonSchema {
  if (column === undefined || !integerColumn.test(column.type)) return property
  const pin = (schema: JsonSchema): JsonSchema => {
    if (schema.type === 'string' && schema.pattern === undefined && schema.format === undefined) {
      return { ...schema, pattern: canonicalIntegerPattern }
    }
    return Array.isArray(schema.anyOf)
      ? { ...schema, anyOf: schema.anyOf.map((member: unknown) => (isJsonSchema(member) ? pin(member) : member)) }
      : schema
  }
  return pin(property)
}

/**
 * A string field on PostgreSQL gets {@link storableTextPattern} (its text cannot hold NUL), unless it has a
 * pattern, a format, an enum or a const of its own, which say what it takes.
 */
function storableStrings (property: JsonSchema, dialect: DialectName | undefined): JsonSchema {
  if (dialect !== 'postgres') return property
  const pin = (schema: JsonSchema): JsonSchema => {
    const own = schema.pattern ?? schema.format ?? schema.enum ?? schema.const
    if (schema.type === 'string' && own === undefined) return { ...schema, pattern: storableTextPattern }
    return Array.isArray(schema.anyOf)
      ? { ...schema, anyOf: schema.anyOf.map((member: unknown) => (isJsonSchema(member) ? pin(member) : member)) }
      : schema
  }
  return pin(property)
}

/**
 * The object schemas of a relation field (`Author`, `Union([Author, Null])`, `Array(Tag)`) and of the
 * relations nested in them, as plain inline schemas: their `$id` and the relatedConfig they carry are
 * dropped. Inline, code that copies the entity's properties (the `?fields=` serializers) works on its own;
 * an `$id` would make @fastify/swagger list each one as a component that nothing references.
 */
function inlineRelation (property: JsonSchema): JsonSchema {
  const named = (object: JsonSchema): JsonSchema => {
    const { $id: _id, relatedConfig: _config, ...rest } = object
    const properties: Record<string, JsonSchema> = {}
    for (const [name, child] of Object.entries(propertiesOf(rest))) properties[name] = inlineRelation(child)
    return { ...rest, properties }
  }
  if (isObjectSchema(property)) return named(property)
  const items = property.items
  if (property.type === 'array' && isObjectSchema(items)) return { ...property, items: named(items) }
  const members: unknown[] | undefined = Array.isArray(property.anyOf) ? property.anyOf : undefined
  if (members !== undefined && members.filter(isObjectSchema).length === 1) {
    return { ...property, anyOf: members.map((member) => (isObjectSchema(member) ? named(member) : member)) }
  }
  return property
}

/**
 * The entity schema as served: plain, with bounded integers, relation fields marked read-only and
 * their object schemas inline; number fields over a single-precision column of `dialect` are bounded by its
 * range, and on PostgreSQL string fields exclude NUL. A field marked read-only in any way (`readOnly: true`
 * on it or on a branch of its union, `Type.Readonly`, `Type.ReadonlyOptional`) gets `readOnly: true`, and so
 * do the primary key and the version column (`versionField`) whatever the schema says: they are never written
 * from a body.
 */
export function deriveEntity (
  schema: TObject,
  columns: Map<string, ColumnInfo>,
  relationFields: ReadonlySet<string>,
  id: string,
  serverKeys: ReadonlySet<string>,
  versionField?: string,
  dialect?: DialectName
): JsonSchema {
  const entity = plain(schema)
  const properties: Record<string, JsonSchema> = {}
  for (const [name, property] of Object.entries(propertiesOf(entity))) {
    if (relationFields.has(name)) {
      properties[name] = { ...inlineRelation(property), readOnly: true }
      continue
    }
    const column = columns.get(name)
    const bounded = storableStrings(canonicalStrings(boundIntegers(property, column, dialect), column), dialect)
    // Every read-only marker becomes `readOnly: true` on the field itself, where bodies and OpenAPI look.
    properties[name] =
      serverKeys.has(name) || name === versionField || isReadOnly(bounded) || hasReadonlyKind(schema.properties[name])
        ? { ...bounded, readOnly: true }
        : bounded
  }
  delete entity.$id
  // A relatedConfig attached to the schema is a declaration, not JSON Schema.
  delete entity.relatedConfig
  return { ...entity, $id: id, properties }
}

/** Children kept per parent by each relation field, and by the relations of its rows (relations/declaration.ts). */
export interface ChildLimits {
  readonly [field: string]: { readonly limit: number | undefined, readonly nested: ChildLimits }
}

/**
 * The entity with `maxItems` on each to-many relation field that keeps at most `limit` children, in its rows'
 * relations too: the document says how long the list can be.
 */
export function withChildLimits (entity: JsonSchema, limits: ChildLimits): JsonSchema {
  const limited = (schema: JsonSchema, child: ChildLimits[string]): JsonSchema => {
    if (schema.type === 'array' && isJsonSchema(schema.items)) {
      const items = withChildLimits(schema.items, child.nested)
      return { ...schema, items, ...(child.limit === undefined ? {} : { maxItems: child.limit }) }
    }
    if (Array.isArray(schema.anyOf)) {
      const anyOf = schema.anyOf.map((member: unknown) => (isJsonSchema(member) ? limited(member, child) : member))
      return { ...schema, anyOf }
    }
    return schema.type === 'object' ? withChildLimits(schema, child.nested) : schema
  }
  const properties = propertiesOf(entity)
  if (Object.keys(limits).length === 0 || Object.keys(properties).length === 0) return entity
  for (const [field, child] of Object.entries(limits)) {
    const property = properties[field]
    if (property !== undefined) properties[field] = limited(property, child)
  }
  return { ...entity, properties }
}

/**
 * A write body: every field may be sent; read-only ones (and relations) are accepted and ignored,
 * unknown ones are rejected. `partial` drops `required` for PATCH.
 */
export function deriveBody (entity: JsonSchema, partial: boolean): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  const writable: string[] = []
  for (const [name, property] of Object.entries(propertiesOf(entity))) {
    if (isReadOnly(property)) {
      properties[name] = { readOnly: true, description: 'Read-only: ignored when sent.' }
    } else {
      properties[name] = property
      writable.push(name)
    }
  }
  const listed: unknown[] = Array.isArray(entity.required) ? entity.required : []
  const required = partial ? [] : writable.filter((name) => listed.includes(name))
  const body: JsonSchema = { type: 'object', properties, additionalProperties: false }
  if (required.length > 0) body.required = required
  return body
}

/** An element of `PATCH {prefix}/bulk` (BULK_PATCH): a PATCH body (of `entity`) that carries its row's key (every
 * column of a composite one). */
export function deriveKeyedPatch (entity: JsonSchema, primaryKey: string | readonly string[]): JsonSchema {
  const body = deriveBody(entity, true)
  const columns = typeof primaryKey === 'string' ? [primaryKey] : primaryKey
  const properties = { ...propertiesOf(body) }
  for (const column of columns) {
    const { readOnly: _readOnly, ...key } = propertiesOf(entity)[column] ?? { type: 'string' }
    properties[column] = { ...key, description: `The ${column} of the row to update.` }
  }
  return { ...body, properties, required: [...columns] }
}

/** The `:id` path parameter, typed like the primary key. */
export function deriveParams (entity: JsonSchema, primaryKey: string): JsonSchema {
  const { readOnly: _readOnly, ...key } = propertiesOf(entity)[primaryKey] ?? { type: 'string' }
  return {
    type: 'object',
    properties: { id: { ...key, description: `The ${primaryKey} of the row.` } },
    required: ['id'],
    additionalProperties: false,
  }
}

/** The writable fields of a body: read-only fields and relations are dropped, never written. */
export function writableFields (entity: JsonSchema): string[] {
  return Object.entries(propertiesOf(entity))
    .filter(([, property]) => !isReadOnly(property))
    .map(([name]) => name)
}

const scalarTypes = new Set(['string', 'number', 'integer', 'boolean'])

/** `{ type: 'null' }`, annotations aside. */
function isNullSchema (schema: unknown): boolean {
  return isSchemaLike(schema) && schema.type === 'null' && schema.const === undefined
}

/** The scalar branch of `Union([X, Null])` (either order), when X is one scalar type and no literal. */
function nullableScalar (schema: JsonSchema): JsonSchema | undefined {
  const members = Array.isArray(schema.anyOf) ? schema.anyOf : undefined
  if (members?.length !== 2) return undefined
  const [first, second] = members
  const scalar = isNullSchema(first) ? second : isNullSchema(second) ? first : undefined
  if (!isSchemaLike(scalar) || typeof scalar.type !== 'string' || !scalarTypes.has(scalar.type)) return undefined
  return scalar.const === undefined && scalar.enum === undefined ? { ...scalar } : undefined
}

/**
 * The schema the response serializer (fast-json-stringify) is compiled from, apart from the one that is
 * validated and documented. fast-json-stringify matches every branch of an `anyOf` against the value
 * before it writes it, so `Union([Number, Null])` fails (a 500) on what drivers hand back for such a column:
 * a numeric string (pg NUMERIC or int8), SQLite's 0/1 for a boolean, a small BIGINT as a number for a
 * string. A union of one scalar type and null becomes that type with `nullable: true`: null is written as
 * null and any other value is coerced, as for a plain field. (`type: [X, 'null']` would not do: it is
 * matched by type too.) `nullable` is OpenAPI 3.0's keyword, so this schema is never documented.
 */
export function deriveSerializerSchema (schema: JsonSchema): JsonSchema {
  const scalar = nullableScalar(schema)
  if (scalar !== undefined) {
    const { anyOf: _anyOf, ...outer } = schema
    return { ...outer, ...scalar, nullable: true }
  }
  const derived: JsonSchema = { ...schema }
  if (isSchemaLike(schema.properties)) {
    derived.properties = Object.fromEntries(
      Object.entries(propertiesOf(schema)).map(([name, property]) => [name, deriveSerializerSchema(property)])
    )
  }
  if (isSchemaLike(schema.items) && !Array.isArray(schema.items)) derived.items = deriveSerializerSchema(schema.items)
  if (Array.isArray(schema.anyOf)) {
    derived.anyOf = schema.anyOf.map((member: unknown) =>
      isSchemaLike(member) ? deriveSerializerSchema(member) : member
    )
  }
  return derived
}
