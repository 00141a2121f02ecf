import type { TObject, TSchema } from '@sinclair/typebox'
import { invalidOption } from '../errors.js'
import { isList, isObjectSchema, isRecord } from '../schema/object-schema.js'
import type { RelatedConfig, RulesFrom } from './config.js'
import type { ChildLimits } from '../schema/derive.js'

/** How a relation's rows meet the parent's. */
export type RelationKind = 'many-to-one' | 'one-to-many' | 'many-to-many'

/**
 * One relation as declared, checked against the schema (not yet against the catalog).
 * Every name here comes from the declaration.
 */
export interface DeclaredRelation {
  /** Where it is declared, such as `relatedConfig.prefetchRelated.books`: named in errors. */
  readonly path: string
  readonly field: string
  readonly kind: RelationKind
  readonly table: string
  /** many-to-one: the parent's column; one-to-many: the target's column. */
  readonly foreignKey: string | undefined
  readonly through: { readonly table: string, readonly sourceKey: string, readonly targetKey: string } | undefined
  /** As declared, or `undefined` for the default. */
  readonly references: string | undefined
  /** The sort keys as written (`-year`), trimmed; checked against the catalog and parsed by query/ordering.ts. */
  readonly orderBy: readonly string[] | undefined
  /** Children kept per parent (the first in `orderBy`), or `undefined` for all of them. */
  readonly limit: number | undefined
  /** The schema of one related row (the object inside the field's union or array). */
  readonly target: TObject
  /** The relations of the related rows: the declaration's, else the one attached to `target`. */
  readonly relatedConfig: RelatedConfig<unknown> | undefined
  /** Where the related rows' rule comes from, as declared (resolved once the app is ready: mount/relation-rules.ts). */
  readonly rulesFrom: RulesFrom<unknown> | undefined
  /** Whether bodies may write it (`writable: true`; mount/writable-relations.ts). */
  readonly writable: boolean
}

function name (path: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    invalidOption(path, `expected a table or column name, got ${JSON.stringify(value)}`)
  }
  return value
}

function optionalName (path: string, value: unknown): string | undefined {
  return value === undefined ? undefined : name(path, value)
}

/** The object schema of a many-to-one field: `Author`, or `Type.Union([Author, Type.Null()])`. */
function singleTarget (path: string, field: string, property: TSchema): TObject {
  if (isObjectSchema(property)) return property
  const members = isList(property.anyOf) ? property.anyOf : []
  const [object, ...others] = members.filter(isObjectSchema)
  const rest = members.filter((member) => !isObjectSchema(member) && !(isRecord(member) && member.type === 'null'))
  if (object !== undefined && others.length === 0 && rest.length === 0) return object
  return invalidOption(
    path,
    `schema field "${field}" must be an object, or a union of an object and null ` +
      '(Type.Union([Author, Type.Null()])), to hold a many-to-one relation'
  )
}

/** The item schema of a to-many field: `Type.Array(Tag)`. */
function manyTarget (path: string, field: string, property: TSchema): TObject {
  if (property.type === 'array' && isObjectSchema(property.items)) return property.items
  return invalidOption(
    path, `schema field "${field}" must be an array of objects (Type.Array(Tag)) to hold a to-many relation`
  )
}

/** A `rulesFrom`: a viewset's full prefix, or an object with a `scope` method (a viewset, or a declared rule). */
function rulesFromOf (path: string, value: unknown): RulesFrom<unknown> | undefined {
  if (value === undefined) return undefined
  if (typeof value === 'string' && value !== '') return value
  if (typeof value === 'object' && value !== null && 'scope' in value && typeof value.scope === 'function') {
    return value as RulesFrom<unknown> // checked above: an object whose scope is a function, called as a rule's
  }
  return invalidOption(path, 'expected a viewset, its prefix (such as "/projects"), or { scope: (eb, context) => … }')
}

/** A relation's `rulesFrom`, and its `writable`: a boolean, false by default. */
function rulesAndWrites (where: string, spec: Record<string, unknown>) {
  const rulesFrom = rulesFromOf(`${where}.rulesFrom`, spec.rulesFrom)
  const { writable } = spec
  if (writable === undefined || typeof writable === 'boolean') return { rulesFrom, writable: writable === true }
  return invalidOption(`${where}.writable`, `expected true or false, got ${JSON.stringify(writable)}`)
}

/** Children per parent when a to-many relation sets no `limit`. */
export const defaultRelationLimit = 100

/** A to-many relation's `limit`: a positive integer, `false` for no limit (`undefined`), 100 by default. */
function childLimit (path: string, value: unknown): number | undefined {
  if (value === undefined) return defaultRelationLimit
  if (value === false) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    invalidOption(path, `expected a positive integer, or false for no limit, got ${JSON.stringify(value)}`)
  }
  return value
}

/** Reads `'-created_at'`, `'name,-id'` or `['name', '-id']` as trimmed sort keys. */
function orderKeys (path: string, value: unknown): string[] | undefined {
  if (value === undefined) return undefined
  const parts: unknown[] = typeof value === 'string'
    ? value.split(',')
    : Array.isArray(value) ? value : invalidOption(path, 'expected a string such as "-created_at" or an array of them')
  const keys = parts.map((part) => {
    const text = typeof part === 'string'
      ? part.trim()
      : invalidOption(path, `expected field names, got ${JSON.stringify(part)}`)
    name(path, text.startsWith('-') ? text.slice(1) : text)
    return text
  })
  if (keys.length === 0) invalidOption(path, 'expected at least one field')
  return keys
}

function relationsOf (path: string, value: unknown): Array<[string, Record<string, unknown>]> {
  if (value === undefined) return []
  if (!isRecord(value)) invalidOption(path, 'expected an object keyed by schema field')
  return Object.entries(value).map(([field, spec]) => {
    if (!isRecord(spec)) invalidOption(`${path}.${field}`, 'expected an object such as { table, foreignKey }')
    return [field, spec]
  })
}

/**
 * A relatedConfig value as the declaration reads it: an object is taken as a config, and its shape is then
 * checked key by key (declaredRelations); anything else is refused there, as `relatedConfig` of its path.
 */
function isRelatedConfig (value: unknown): value is RelatedConfig<unknown> {
  return isRecord(value)
}

function relatedConfigOf (value: unknown): RelatedConfig<unknown> | undefined {
  return isRelatedConfig(value) ? value : undefined
}

/** The relatedConfig attached to a schema (`Type.Object({...}, { relatedConfig })`), if any. */
export function attachedConfig (schema: TObject): RelatedConfig<unknown> | undefined {
  return 'relatedConfig' in schema ? relatedConfigOf(schema.relatedConfig) : undefined
}

/**
 * Checks the shape of a relation config against the schema it loads into: every field is a relation-shaped
 * field of the schema, declared once, with the options its kind needs. The catalog is checked later, and
 * unknown keys earlier (at construction, by `resolveOptions`).
 */
export function declaredRelations (config: unknown, schema: TObject, path = 'relatedConfig'): DeclaredRelation[] {
  if (!isRecord(config)) invalidOption(path, 'expected an object with selectRelated and/or prefetchRelated')
  const properties = schema.properties
  const fieldSchema = (where: string, field: string): TSchema => {
    const property = Object.hasOwn(properties, field) ? properties[field] : undefined
    if (property === undefined) {
      invalidOption(where, `"${field}" is not a field of the schema (fields: ${Object.keys(properties).join(', ')}); ` +
        'add it to the schema')
    }
    return property
  }
  const declared: DeclaredRelation[] = []
  const selectPath = `${path}.selectRelated`
  for (const [field, spec] of relationsOf(selectPath, config.selectRelated)) {
    const where = `${selectPath}.${field}`
    const target = singleTarget(where, field, fieldSchema(where, field))
    declared.push({
      path: where,
      field,
      kind: 'many-to-one',
      table: name(`${where}.table`, spec.table),
      foreignKey: name(`${where}.foreignKey`, spec.foreignKey),
      through: undefined,
      references: optionalName(`${where}.references`, spec.references),
      orderBy: undefined,
      limit: undefined,
      target,
      relatedConfig: relatedConfigOf(spec.relatedConfig) ?? attachedConfig(target),
      ...rulesAndWrites(where, spec),
    })
  }
  const prefetchPath = `${path}.prefetchRelated`
  for (const [field, spec] of relationsOf(prefetchPath, config.prefetchRelated)) {
    const where = `${prefetchPath}.${field}`
    if (declared.some((relation) => relation.field === field)) {
      invalidOption(where, `"${field}" is declared in both selectRelated and prefetchRelated; declare it once`)
    }
    const target = manyTarget(where, field, fieldSchema(where, field))
    if ((spec.foreignKey === undefined) === (spec.through === undefined)) {
      invalidOption(where, 'give either foreignKey (one-to-many) or through (many-to-many), not both and not neither')
    }
    const through = throughOf(where, spec.through)
    declared.push({
      path: where,
      field,
      kind: through === undefined ? 'one-to-many' : 'many-to-many',
      table: name(`${where}.table`, spec.table),
      foreignKey: optionalName(`${where}.foreignKey`, spec.foreignKey),
      through,
      references: optionalName(`${where}.references`, spec.references),
      orderBy: orderKeys(`${where}.orderBy`, spec.orderBy),
      limit: childLimit(`${where}.limit`, spec.limit),
      target,
      relatedConfig: relatedConfigOf(spec.relatedConfig) ?? attachedConfig(target),
      ...rulesAndWrites(where, spec),
    })
  }
  return declared
}

/** A many-to-many relation's join table, checked; `undefined` for a one-to-many one. */
function throughOf (where: string, value: unknown): DeclaredRelation['through'] {
  if (value === undefined) return undefined
  if (!isRecord(value)) invalidOption(`${where}.through`, 'expected { table, sourceKey, targetKey }')
  return {
    table: name(`${where}.through.table`, value.table),
    sourceKey: name(`${where}.through.sourceKey`, value.sourceKey),
    targetKey: name(`${where}.through.targetKey`, value.targetKey),
  }
}

/**
 * The `limit` of each to-many relation of a config, and of the relations nested in its rows, by field: for the
 * document (`maxItems`). The config was checked by
 * {@link declaredRelations} already; nesting stops at `depth`, as loading does.
 */
export function relationLimits (config: unknown, schema: TObject, depth = 8): ChildLimits {
  if (config === undefined || depth === 0) return {}
  return Object.fromEntries(declaredRelations(config, schema).map((relation) => [relation.field, {
    limit: relation.limit,
    nested: relationLimits(relation.relatedConfig, relation.target, depth - 1),
  }]))
}
