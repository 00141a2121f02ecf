import type { FastifyInstance } from 'fastify'
import { invalidOption } from '../errors.js'
import { underlyingDatabase } from '../execution/request-transaction.js'
import { NestedWrites } from '../http/nested-writes.js'
import { asWrittenOf } from '../http/children-as-written.js'
import type { AsWrittenTarget } from '../http/children-as-written.js'
import type { NestedTarget, WritableRelation } from '../http/writable-relation.js'
import type { RouteContext, RouteHandlers } from '../http/route-context.js'
import type { ViewsetComponents } from '../schema/components.js'
import type { RelatedConfig } from '../relations/config.js'
import { declaredRelations } from '../relations/declaration.js'
import type { DeclaredRelation } from '../relations/declaration.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf, writableFields } from '../schema/derive.js'
import type { TObject } from '@sinclair/typebox'
import { isRecord } from '../schema/object-schema.js'
import { RelationRuleSlot } from '../relations/relation-rule.js'
import { resolveRelationRules } from './relation-rules.js'
import { findViewsets, whenAllRegistered } from './registry.js'
import type { RegisteredViewset } from './registry.js'

// Mounting nested writes: every viewset is recorded as a target other viewsets' writable relations write through, and
// a viewset with writable relations gets its POST, PUT and PATCH wrapped (http/nested-writes.ts). Each relation finds
// the viewset serving its table once the application is ready; none (or two, unnamed) fails `ready()`.

/** Every mounted viewset as a nested write reaches it, by the viewset object the registry holds. */
const targets = new WeakMap<object, NestedTarget>()

/** What mounting hands over: the viewset's declaration in part, and what it built. */
export interface NestedWritesSource extends NestedTarget {
  readonly declaration: {
    readonly viewset: object
    readonly relatedConfig: RelatedConfig<unknown> | undefined
    readonly schema: TObject
    readonly db: object
    readonly overridden: ReadonlySet<string>
  }
}

/** A writable relation's schema in a body, before the related viewset is known: its shape only. */
function shapeOf (relation: DeclaredRelation, key: JsonSchema, maxBulk: number): JsonSchema {
  const name = relation.references ?? 'id'
  const reference = { type: 'object', properties: { [name]: key }, required: [name] }
  if (relation.kind === 'many-to-one') {
    return { anyOf: [reference, { type: 'null' }], description: `Sets ${relation.foreignKey} by the row's key.` }
  }
  const items = relation.kind === 'many-to-many' ? reference : { type: 'object' }
  return { type: 'array', items, maxItems: maxBulk }
}

/** The key schema of a related row, from the parent's declared row: its type, never read-only in a body. */
function keyOf (relation: DeclaredRelation): JsonSchema {
  const { readOnly: _readOnly, ...key } = propertiesOf(relation.target)[relation.references ?? 'id'] ?? {}
  return key
}

/**
 * Records `source` as a target of nested writes, and answers its handlers with its writable relations' nested writes,
 * their body fields documented and validated by shape; the related viewsets are found when the application is ready.
 *
 * @example
 * ```ts
 * const handlers = withNestedWrites(fastify, overrideHandlers(defaults, declaration), { declaration, ...built })
 * ```
 */
export function withNestedWrites (
  fastify: FastifyInstance,
  handlers: RouteHandlers,
  source: NestedWritesSource
): RouteHandlers {
  const { declaration, context } = source
  targets.set(declaration.viewset, { defaults: source.defaults, context, rules: source.rules })
  const { relatedConfig, schema } = declaration
  const all = relatedConfig === undefined ? [] : declaredRelations(relatedConfig, schema)
  const declared = all.filter((relation) => relation.writable)
  if (declared.length === 0) return handlers
  const { primaryKey, maxBulk, components, key } = context.schemas
  // A to-many child names its parent by one key column: a composite-keyed parent writes its to-one relations only.
  const toMany = key.composite ? declared.find((relation) => relation.kind !== 'many-to-one') : undefined
  if (toMany !== undefined) {
    invalidOption(`${toMany.path}.writable`, `a viewset with a composite key (${key.columns.join(', ')}) writes ` +
      'only its many-to-one relations')
  }
  const writable = writableFields(context.schemas.entity)
  const relations = declared.map((relation) => writableRelation(relation, writable, primaryKey))
  documentShapes(components.bodies, declared, maxBulk)
  const db = underlyingDatabase(context.db)
  whenAllRegistered(fastify, (entries) => {
    resolveRelationRules(entries, db, relations.map(({ rule }) => rule))
    declared.forEach((relation, index) => {
      const written = relations[index]
      if (written === undefined) return
      const target = targetOf(fastify, relation, context, written.foreignKey)
      written.target = target
      if (relation.through !== undefined) written.link = linkOf(fastify, relation, relation.through.table, db)
      if (relation.kind !== 'one-to-many') return
      written.targetKey = target.context.schemas.primaryKey
      written.asWritten = asWrittenOf(relation, childOf(target))
      documentChildren(fastify, components.bodies, relation.field, target, written.targetKey)
    })
  })
  const { overridden } = declaration
  const answer = {
    all: all.map(({ field }) => field),
    only: context.fields.defaultRelations,
    defaultWrite: !overridden.has('createElement') && hooksAfter(source.defaults) === undefined,
    defaults: overridden.has('createElement') ? undefined : source.defaults,
  }
  return new NestedWrites(relations, context.db, maxBulk, answer).wrap(handlers)
}

/** A viewset's `afterWrite` of its own (not the history's alone), or `undefined`. */
function hooksAfter (defaults: NestedTarget['defaults']) {
  const { afterWrite, afterWriteNow } = defaults.context
  return afterWriteNow === undefined ? afterWrite : undefined
}

/** A child viewset as children-as-written.ts reads it. */
function childOf (target: NestedTarget): AsWrittenTarget {
  const { primaryKey, entity } = target.context.schemas
  return { primaryKey, entity, afterWrite: hooksAfter(target.defaults) !== undefined }
}

/** A declared writable relation as requests write it; a to-one's foreign key must be a writable field. */
function writableRelation (relation: DeclaredRelation, writable: readonly string[], primaryKey: string) {
  if (relation.kind === 'many-to-one' && !writable.includes(relation.foreignKey ?? '')) {
    invalidOption(`${relation.path}.writable`,
      `its foreignKey "${String(relation.foreignKey)}" must be a writable field of the schema`)
  }
  const written: WritableRelation = {
    field: relation.field,
    kind: relation.kind,
    table: relation.table,
    foreignKey: relation.foreignKey ?? '',
    // A child's key is its viewset's, known once the application is ready.
    targetKey: relation.kind === 'one-to-many' ? primaryKey : relation.references ?? 'id',
    parentKey: relation.kind === 'one-to-many' ? relation.references ?? primaryKey : primaryKey,
    through: relation.through,
    rule: new RelationRuleSlot(relation.path, relation.table, relation.table, relation.rulesFrom,
      relation.kind === 'many-to-one' ? 'GET' : 'LIST'),
    target: undefined,
  }
  return written
}

/** The writable relation fields of the bodies, by shape; a to-one's foreign key no longer required (either is sent). */
function documentShapes (bodies: ViewsetComponents['bodies'], declared: readonly DeclaredRelation[], maxBulk: number) {
  const references = new Set(declared.flatMap(({ kind, foreignKey }) => kind === 'many-to-one' ? [foreignKey] : []))
  for (const body of Object.values(bodies)) {
    const properties = propertiesOf(body)
    for (const relation of declared) properties[relation.field] = shapeOf(relation, keyOf(relation), maxBulk)
    body.properties = properties
    const required = Array.isArray(body.required) ? body.required.filter((name) => !references.has(name)) : []
    if (required.length > 0) body.required = required
    else delete body.required
  }
}

/** The viewset a relation writes through, checked: over the parent's database, a child's foreign key writable. */
function targetOf (fastify: FastifyInstance, relation: DeclaredRelation, parent: RouteContext, foreignKey: string) {
  const entry = servingEntry(fastify, underlyingDatabase(parent.db), relation)
  const target = targets.get(entry.viewset)
  if (target === undefined || underlyingDatabase(target.context.db) !== underlyingDatabase(parent.db)) {
    return invalidOption(`${relation.path}.writable`, `the viewset at ${entry.prefix} writes to another database`)
  }
  if (relation.kind === 'one-to-many' && !writableFields(target.context.schemas.entity).includes(foreignKey)) {
    invalidOption(`${relation.path}.writable`,
      `its foreignKey "${foreignKey}" must be a writable field of the viewset at ${entry.prefix}`)
  }
  return target
}

/**
 * The viewset a many-to-many's link rows are written through: the one serving the link table, when one does over the
 * parent's database. Served twice, the links are plain rows, unless one of the two soft-deletes or keeps a history:
 * then startup fails, since the links could be neither.
 */
function linkOf (fastify: FastifyInstance, relation: DeclaredRelation, table: string, db: object) {
  const serving = findViewsets(fastify, db, table).flatMap((entry) => {
    const target = targets.get(entry.viewset)
    return target === undefined ? [] : [{ prefix: entry.prefix, target }]
  })
  const [only, ...others] = serving
  if (others.length === 0) return only?.target
  const kept = serving.filter(({ target }) =>
    target.context.softDelete !== undefined || target.context.history !== undefined)
  if (kept.length > 0) {
    invalidOption(`${relation.path}.writable`, `viewsets at ${serving.map(({ prefix }) => prefix).join(' and ')} ` +
      `serve its link table "${table}", and ${kept.map(({ prefix }) => prefix).join(' and ')} soft-deletes or keeps ` +
      'a history: serve the link table once, so that its links are written as that viewset\'s rows')
  }
  return undefined
}

/** The viewset a writable relation writes through: the one serving its table, or the one `rulesFrom` names. */
function servingEntry (fastify: FastifyInstance, db: object, relation: DeclaredRelation): RegisteredViewset {
  const serving = findViewsets(fastify, db, relation.table)
  const { rulesFrom } = relation
  const named = rulesFrom === undefined
    ? serving
    : serving.filter((entry) => entry.prefix === rulesFrom || entry.viewset === rulesFrom)
  const [entry, ...others] = named
  if (entry === undefined) {
    return invalidOption(`${relation.path}.writable`,
      `no viewset of the app serves table "${relation.table}"` +
        `${rulesFrom === undefined ? '' : ' as rulesFrom names it'}: ` +
        'a writable relation writes through one; register it, or drop writable')
  }
  if (others.length > 0) {
    invalidOption(`${relation.path}.writable`,
      `viewsets at ${named.map(({ prefix }) => prefix).join(' and ')} serve table "${relation.table}": ` +
        'name the one to write through with rulesFrom')
  }
  return entry
}

/** The documented children of a one-to-many in the parent's bodies (and their stored copies): the child's PATCH body
 * with its key, else its POST body. */
function documentChildren (
  fastify: FastifyInstance,
  bodies: Readonly<Record<string, JsonSchema>>,
  field: string,
  target: NestedTarget,
  key: string
): void {
  const { schemas: { components, entity }, prefix } = target.context
  const patch: JsonSchema = components.bodies.PATCH ?? components.bodies.POST ?? { type: 'object' }
  const { $id: _id, examples: _examples, required: _required, ...rest } = patch
  const { readOnly: _readOnly, ...keySchema } = propertiesOf(entity)[key] ?? {}
  const items = {
    ...rest,
    properties: { ...propertiesOf(rest), [key]: { ...keySchema, description: `Updates the child with this ${key}.` } },
    description: `A row of ${prefix}: without its ${key}, created as POST ${prefix} creates it; with it, that child ` +
      `(which must be this row's) updated as PATCH ${prefix}/{id} updates it.`,
  }
  for (const body of Object.values(bodies)) {
    const stored: unknown = typeof body.$id === 'string' ? fastify.getSchema(body.$id) : undefined
    for (const schema of isRecord(stored) && stored !== body ? [body, stored] : [body]) {
      const properties = propertiesOf(schema)
      const property = properties[field]
      if (property !== undefined) properties[field] = { ...property, items }
      schema.properties = properties
    }
  }
}
