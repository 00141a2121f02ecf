import type { TObject } from '@sinclair/typebox'
import { invalidOption as fail } from './errors.js'
import { checkPrimaryKey } from './schema/key-columns.js'
import { checkReplicaOptions } from './data/replica-options.js'
import type { ReplicaOptions, ReplicaPlan } from './data/replica-options.js'
import { isRecord } from './schema/object-schema.js'
import { checkTypeBoxCopy } from './schema/typebox-copy.js'
import { checkKyselyCopy } from './dialect/shared/kysely-copy.js'
import { checkCountOptions } from './query/count-plan.js'
import type { CountPlan } from './query/count-plan.js'
import { checkScopeOption } from './query/scope-rules.js'
import { allMethods, defaultMethods } from './viewset-options.js'
import type { ViewsetMethod, ViewsetOptions } from './viewset-options.js'
import { checkRowLevelSecurity } from './tokens.js'
import { checkIdempotency, type IdempotencyResolution } from './data/idempotency-options.js'
import { checkSoftDelete, type SoftDeleteResolution } from './data/soft-delete-options.js'
import { checkHistory, type HistoryResolution } from './data/history-options.js'
import type { RowLevelSecurityOptions } from './tokens.js'
import { checkChanges } from './data/changes-options.js'
import type { ResolvedChanges } from './data/changes-options.js'

// Phase 1 of the option checks: every check that needs no database, run by the Viewset constructor (and so by
// createViewset) before anything is registered. A mistake throws FST_VIEWSET_INVALID_OPTION, a TypeError, at
// once. Phase 2, against the catalog, runs when the viewset is mounted (mount/mount-viewset.ts).

export { baseMethods, defaultMethods, filterOperators, viewsetMethods } from './viewset-options.js'
export type { ReplicaOptions }
export type {
  AfterWriteFunction, AfterWriteMethod, AuthorizedMethod, BeforeWriteFunction, CheckedSchema, FieldOf, FilterOperator,
  ListOptions, RelationPath, RowChange, RowContext, SchemaOf, DerivedScopedMethod, ScopedMethod, ScopeFunction,
  ScopeRules, TokenClaims, ViewsetMethod, ViewsetOptions, ViewsetToken, WriteMethod,
} from './viewset-options.js'
export type { RowLevelSecurityOptions } from './tokens.js'

/**
 * Every key an options object may hold, by where it appears. Unknown keys fail at construction (a typo
 * such as `protectMethods` would otherwise leave POST open), so a new option is one line here; its value
 * is checked where it is used.
 */
const knownOptionKeys = {
  options: [
    'db',
    'readDb',
    'table',
    'schema',
    'primaryKey',
    'methods',
    'tags',
    'name',
    'maxLimit',
    'defaultLimit',
    'protectedMethods',
    'authenticate',
    'authorize',
    'searchFields',
    'fullText',
    'orderingFields',
    'defaultOrder',
    'filterFields',
    'alwaysCount',
    'allowCount',
    'countEstimateThreshold',
    'estimateWithRules',
    'maxSearchLength',
    'maxOffset',
    'pagination',
    'strictIndexes',
    'maxBulk', 'maxAffected',
    'conflictFields',
    'relatedConfig',
    'defaultRelations',
    'scope',
    'beforeWrite',
    'fieldAccess',
    'afterWrite',
    'versionField',
    'requireIfMatch',
    'withoutTokens',
    'conflictDetail',
    'parent',
    'replica',
    'rowLevelSecurity',
    'idempotency', 'history', 'changes', 'groupByFields', 'aggregateFields', 'softDelete',
  ],
  rowLevelSecurity: ['roles', 'defaultRole'],
  relatedConfig: ['selectRelated', 'prefetchRelated'],
  selectRelated: ['table', 'foreignKey', 'references', 'relatedConfig', 'rulesFrom', 'writable'],
  prefetchRelated: [
    'table', 'foreignKey', 'through', 'references', 'orderBy', 'limit', 'relatedConfig', 'rulesFrom', 'writable',
  ],
  through: ['table', 'sourceKey', 'targetKey'],
} as const satisfies Record<string, readonly string[]>

// Every key of ViewsetOptions is listed: an option missing from the table fails to compile, naming it.
type UnlistedOption = Exclude<keyof ViewsetOptions<unknown, never, TObject>, (typeof knownOptionKeys.options)[number]>
const everyOptionListed: [UnlistedOption] extends [never] ? true : UnlistedOption = true
void everyOptionListed

/** Levenshtein distance, stopping early past `limit`: a few short keys, so no library. */
function editDistance (a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/** Throws for the first key of `value` that is not in `known`, naming its path and the closest known key. */
export function checkKeys (path: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue
    let best: string | undefined
    let distance = 3
    for (const candidate of known) {
      const d = editDistance(key.toLowerCase(), candidate.toLowerCase(), 2)
      if (d < distance) [best, distance] = [candidate, d]
    }
    fail(
      path === '' ? key : `${path}.${key}`,
      best === undefined ? `unknown key; the keys are ${known.join(', ')}` : `unknown key; did you mean ${best}?`
    )
  }
}

/** The object a relation field holds: `Author`, `Type.Union([Author, Type.Null()])` or `Type.Array(Tag)`. */
function relationTarget (property: unknown): Record<string, unknown> | undefined {
  if (!isRecord(property)) return undefined
  if (property.type === 'object') return property
  if (property.type === 'array') return relationTarget(property.items)
  const objects = Array.isArray(property.anyOf)
    ? property.anyOf.filter((member) => isRecord(member) && member.type === 'object')
    : []
  return objects.length === 1 ? relationTarget(objects[0]) : undefined
}

// Deep enough for any real nesting; a schema whose relatedConfig points back at itself stops here and
// the relation loader reports it.
const maxKeyDepth = 10

/**
 * Checks the keys of a relatedConfig, its entries and their `through`, then of the nested configs (the
 * entry's, else the one attached to the related schema). Values are checked by the relation loader.
 */
function checkRelatedConfigKeys (path: string, config: unknown, schema: unknown, depth: number): void {
  if (!isRecord(config) || depth > maxKeyDepth) return
  checkKeys(path, config, knownOptionKeys.relatedConfig)
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  for (const kind of ['selectRelated', 'prefetchRelated'] as const) {
    const entries = config[kind]
    if (!isRecord(entries)) continue
    for (const [field, entry] of Object.entries(entries)) {
      if (!isRecord(entry)) continue
      const where = `${path}.${kind}.${field}`
      checkKeys(where, entry, knownOptionKeys[kind])
      if (kind === 'prefetchRelated' && isRecord(entry.through)) {
        checkKeys(`${where}.through`, entry.through, knownOptionKeys.through)
      }
      const target = relationTarget(Object.hasOwn(properties, field) ? properties[field] : undefined)
      checkRelatedConfigKeys(`${where}.relatedConfig`, entry.relatedConfig ?? target?.relatedConfig, target, depth + 1)
    }
  }
}

function isViewsetMethod (value: unknown): value is ViewsetMethod {
  return allMethods.some((method) => method === value)
}

function isStringArray (value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}

function checkMethodList (option: string, value: unknown): ViewsetMethod[] {
  if (!Array.isArray(value)) {
    fail(option, `expected an array of ${allMethods.join(', ')}, got ${JSON.stringify(value)}`)
  }
  const seen = new Set<ViewsetMethod>()
  for (const method of value) {
    if (!isViewsetMethod(method)) {
      fail(option, `unknown method ${JSON.stringify(method)}; allowed: ${allMethods.join(', ')}`)
    }
    if (seen.has(method)) fail(option, `method ${JSON.stringify(method)} is listed twice`)
    seen.add(method)
  }
  // LIST before GET, and every route in a fixed order, whatever order was given.
  return allMethods.filter((method) => seen.has(method))
}

/** Checks a method list (for `register(methods)`), sorted into route order. */
export function checkMethods (value: unknown, option = 'methods'): ViewsetMethod[] {
  return checkMethodList(option, value)
}

/** The options with defaults applied, checked and frozen. */
export interface ResolvedOptions extends IdempotencyResolution, SoftDeleteResolution, HistoryResolution {
  readonly table: string
  readonly primaryKey: string // the key's first column; `id` until mounting reads a key the options left out
  /** The key's columns in key order: `undefined` until mounting reads them from the catalog (schema/key-columns.ts). */
  readonly keyColumns: readonly [string, ...string[]] | undefined
  readonly methods: readonly ViewsetMethod[]
  readonly protectedMethods: readonly ViewsetMethod[]
  readonly tags: readonly string[]
  readonly name: string | undefined
  readonly maxLimit: number
  readonly defaultLimit: number
  readonly maxOffset: number
  readonly maxSearchLength: number
  readonly pagination: 'offset' | 'cursor'
  readonly maxBulk: number
  readonly maxAffected: number
  readonly conflictFields: readonly string[] | undefined
  readonly versionField: string | undefined
  readonly requireIfMatch: boolean
  /** `allowCount`, `alwaysCount`, `countEstimateThreshold` and `estimateWithRules`. */
  readonly counting: CountPlan
  readonly conflictDetail: 'field' | 'none'
  /** `parent`: each parameter of a nested prefix, and the column it binds (mount/parent-binding.ts). */
  readonly parent: Readonly<Record<string, string>>
  readonly strictIndexes: boolean
  /** How reads choose between `readDb` and `db`; `undefined` without `readDb`. */
  readonly replica: ReplicaPlan | undefined
  readonly rowLevelSecurity: RowLevelSecurityOptions | undefined
  /** The live feed of changes (data/changes-options.ts); `undefined` when off. */
  readonly changes: ResolvedChanges | undefined
}

function positiveInteger (option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    fail(option, 'expected a positive integer')
  }
  return value
}

/** `db`, `table` and `schema`: a Kysely instance, a table name and a TypeBox object. */
function checkTarget (options: Record<string, unknown>): Record<string, unknown> & { properties: object } {
  const { db, table, schema } = options
  checkKyselyCopy('db', db)
  checkKyselyCopy('readDb', options.readDb)
  if (typeof db !== 'object' || db === null || !('selectFrom' in db) || typeof db.selectFrom !== 'function') {
    fail('db', 'expected a Kysely instance')
  }
  if (typeof table !== 'string' || table === '') fail('table', 'expected a table name')
  if (!isRecord(schema) || schema.type !== 'object' || !isRecord(schema.properties)) {
    fail('schema', 'expected a TypeBox object schema (Type.Object)')
  }
  checkTypeBoxCopy(schema)
  return { ...schema, properties: schema.properties }
}

/** `maxLimit`, `defaultLimit`, `maxOffset`, `maxSearchLength`, `maxBulk`, `maxAffected`, `pagination`, defaulted. */
function checkLimits (options: Record<string, unknown>) {
  const maxLimit = options.maxLimit ?? 100
  if (typeof maxLimit !== 'number' || !Number.isInteger(maxLimit) || maxLimit < 1) {
    fail('maxLimit', 'expected a positive integer')
  }
  const defaultLimit = options.defaultLimit ?? Math.min(20, maxLimit)
  if (
    typeof defaultLimit !== 'number' || !Number.isInteger(defaultLimit) || defaultLimit < 1 || defaultLimit > maxLimit
  ) {
    fail('defaultLimit', `expected an integer from 1 to maxLimit (${String(maxLimit)})`)
  }
  const pagination = options.pagination ?? 'offset'
  if (pagination !== 'offset' && pagination !== 'cursor') {
    fail('pagination', `expected 'offset' or 'cursor', got ${JSON.stringify(pagination)}`)
  }
  return {
    maxLimit,
    defaultLimit,
    maxOffset: positiveInteger('maxOffset', options.maxOffset ?? 10_000),
    maxSearchLength: positiveInteger('maxSearchLength', options.maxSearchLength ?? 100),
    maxBulk: positiveInteger('maxBulk', options.maxBulk ?? 1000),
    maxAffected: positiveInteger('maxAffected', options.maxAffected ?? options.maxBulk ?? 1000),
    pagination,
  } as const
}

/** The schema's field names, for messages. */
function fieldList (properties: object): string {
  return Object.keys(properties).join(', ')
}

/** `versionField`: an integer field of the schema, not the key. */
function checkVersionField (value: unknown, properties: object, key: readonly string[]): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') fail('versionField', 'expected a field name')
  const property: unknown = Object.hasOwn(properties, value) ? Reflect.get(properties, value) : undefined
  if (!isRecord(property)) {
    fail('versionField', `"${value}" is not a field of the schema (fields: ${fieldList(properties)})`)
  }
  if (property.type !== 'integer') fail('versionField', `"${value}" must be an integer field (Type.Integer())`)
  if (key.includes(value)) fail('versionField', 'the primary key cannot be the version')
  return value
}

/** `conflictFields`: a non-empty list of distinct fields of the schema (their unique key is checked at mounting). */
function checkConflictFields (value: unknown, properties: object): readonly string[] | undefined {
  if (value === undefined) return undefined
  if (!isStringArray(value) || value.length === 0) fail('conflictFields', 'expected a non-empty array of field names')
  const unknown = value.filter((field) => !Object.hasOwn(properties, field))
  if (unknown.length > 0) {
    const verb = unknown.length === 1 ? 'is not a field' : 'are not fields'
    fail('conflictFields', `${unknown.join(', ')} ${verb} of the schema (fields: ${fieldList(properties)})`)
  }
  if (new Set(value).size !== value.length) fail('conflictFields', 'a field is listed twice')
  return Object.freeze([...value])
}

/** `conflictDetail`: `'field'` (the default) or `'none'`. */
function checkConflictDetail (value: unknown): 'field' | 'none' {
  if (value === undefined || value === 'field' || value === 'none') return value ?? 'field'
  return fail('conflictDetail', `expected 'field' or 'none', got ${JSON.stringify(value)}`)
}

/** `parent`: `{ projectId: 'project_id' }`, a parameter name to a column name each (checked at mounting too). */
function checkParent (value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return Object.freeze({})
  if (!isRecord(value)) return fail('parent', "expected an object such as { projectId: 'project_id' }")
  for (const [param, column] of Object.entries(value)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(param)) fail('parent', `"${param}" is not a path parameter name`)
    if (typeof column !== 'string' || column === '') fail(`parent.${param}`, 'expected a column name')
  }
  return Object.freeze(Object.fromEntries(Object.entries(value).map(([param, column]) => [param, String(column)])))
}

/**
 * The shapes of the options whose fields are checked against the catalog at mounting: a wrong kind of value
 * fails here already, with the message mounting would give.
 */
function checkShapes (options: Record<string, unknown>): void {
  if (options.defaultOrder !== undefined && typeof options.defaultOrder !== 'string') {
    fail('defaultOrder', 'expected a string such as "-created_at" or "name,-id"')
  }
  if (options.filterFields !== undefined && !isRecord(options.filterFields)) {
    fail('filterFields', "expected an object such as { name: ['eq', 'contains'] }")
  }
  checkScopeOption(options.scope)
  for (const key of ['authenticate', 'authorize', 'beforeWrite', 'afterWrite', 'fieldAccess'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') fail(key, 'expected a function')
  }
  for (const key of ['requireIfMatch', 'withoutTokens', 'strictIndexes'] as const) {
    if (typeof (options[key] ?? false) !== 'boolean') fail(key, 'expected a boolean')
  }
}

/**
 * Phase 1: checks every option that needs no database and applies the defaults, before anything is
 * registered. Throws `FST_VIEWSET_INVALID_OPTION` (a TypeError) naming the first wrong option.
 *
 * @example
 * ```ts
 * resolveOptions({ db, table: 'items', schema: Item, maxLimit: 0 }) // throws: maxLimit: expected a positive integer
 * ```
 */
export function resolveOptions (options: unknown): ResolvedOptions {
  if (!isRecord(options)) fail('options', 'expected an object')
  checkKeys('', options, knownOptionKeys.options)
  const schema = checkTarget(options)
  const { properties } = schema
  checkRelatedConfigKeys('relatedConfig', options.relatedConfig ?? schema.relatedConfig, schema, 0)
  const keyColumns = checkPrimaryKey(options.primaryKey, properties)
  const primaryKey = keyColumns?.[0] ?? 'id'
  const tags = options.tags ?? []
  if (!isStringArray(tags)) fail('tags', 'expected an array of strings')
  const name = options.name
  if (name !== undefined && (typeof name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]*$/.test(name))) {
    fail('name', 'expected an identifier such as "Items"')
  }
  checkShapes(options)
  const versionField = checkVersionField(options.versionField, properties, keyColumns ?? [])
  return Object.freeze({
    table: String(options.table),
    primaryKey,
    keyColumns,
    methods: Object.freeze(checkMethodList('methods', options.methods ?? defaultMethods)),
    protectedMethods: Object.freeze(checkMethodList('protectedMethods', options.protectedMethods ?? [])),
    tags: Object.freeze([...tags]),
    name,
    ...checkLimits(options),
    conflictFields: checkConflictFields(options.conflictFields, properties),
    versionField,
    requireIfMatch: options.requireIfMatch === true,
    counting: checkCountOptions(options),
    conflictDetail: checkConflictDetail(options.conflictDetail),
    parent: checkParent(options.parent),
    strictIndexes: options.strictIndexes === true,
    replica: checkReplicaOptions(options.replica, options.readDb !== undefined),
    idempotency: checkIdempotency(options.idempotency),
    softDelete: checkSoftDelete(options.softDelete, { primaryKey, versionField }),
    history: checkHistory(options.history),
    changes: checkChanges(options.changes, options.history, String(options.table)),
    rowLevelSecurity: checkRowLevelSecurity(options, (given) => {
      checkKeys('rowLevelSecurity', given, knownOptionKeys.rowLevelSecurity)
    }),
  })
}
