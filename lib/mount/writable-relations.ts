import type { FastifyInstance } from 'fastify'
import { invalidOption } from '../errors.js'
import { underlyingDatabase } from '../execution/request-transaction.js'
import { NestedWrites } from '../http/nested-writes.js'
import type { NestedTarget, WritableRelation } from '../http/nested-writes.js'
import type { RouteHandlers } from '../http/route-context.js'
import type { RelatedConfig } from '../relations/config.js'
import { declaredRelations } from '../relations/declaration.js'
import type { DeclaredRelation } from '../relations/declaration.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf, writableFields } from '../schema/derive.js'
import type { TObject } from '@sinclair/typebox'
import { isRecord } from '../schema/object-schema.js'
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
  const declared = relatedConfig === undefined
    ? []
    : declaredRelations(relatedConfig, schema).filter((relation) => relation.writable)
  if (declared.length === 0) return handlers
  const { primaryKey, maxBulk, components } = context.schemas
  const writable = writableFields(context.schemas.entity)
  const relations = declared.map((relation): WritableRelation => {
    if (relation.kind === 'many-to-one' && !writable.includes(relation.foreignKey ?? '')) {
      invalidOption(`${relation.path}.writable`,
        `its foreignKey "${String(relation.foreignKey)}" must be a writable field of the schema`)
    }
    return {
      field: relation.field,
      kind: relation.kind,
      table: relation.table,
      foreignKey: relation.foreignKey ?? '',
      targetKey: relation.kind === 'one-to-many' ? primaryKey : relation.references ?? 'id',
      parentKey: relation.kind === 'one-to-many' ? relation.references ?? primaryKey : primaryKey,
      through: relation.through,
      resolved: undefined,
    }
  })
  // A to-one sent by reference sets its foreign key: a body sends either.
  const references = new Set(declared.flatMap(({ kind, foreignKey }) => kind === 'many-to-one' ? [foreignKey] : []))
  for (const body of Object.values(components.bodies)) {
    const properties = propertiesOf(body)
    for (const relation of declared) properties[relation.field] = shapeOf(relation, keyOf(relation), maxBulk)
    body.properties = properties
    const required = Array.isArray(body.required) ? body.required.filter((name) => !references.has(name)) : []
    if (required.length > 0) body.required = required
    else delete body.required
  }
  const db = underlyingDatabase(context.db)
  whenAllRegistered(fastify, () => {
    declared.forEach((relation, index) => {
      const written = relations[index]
      if (written === undefined) return
      const entry = servingEntry(fastify, db, relation)
      const target = targets.get(entry.viewset)
      if (target === undefined || target.context.db !== context.db) {
        invalidOption(`${relation.path}.writable`, `the viewset at ${entry.prefix} writes to another database`)
      }
      const childFields = writableFields(target.context.schemas.entity)
      if (relation.kind === 'one-to-many' && !childFields.includes(written.foreignKey)) {
        invalidOption(`${relation.path}.writable`,
          `its foreignKey "${written.foreignKey}" must be a writable field of the viewset at ${entry.prefix}`)
      }
      written.resolved = { target, rule: entry.rule?.source }
      if (relation.kind === 'one-to-many') written.targetKey = target.context.schemas.primaryKey
      if (relation.kind !== 'one-to-many') return
      documentChildren(fastify, components.bodies, relation.field, target, written.targetKey)
    })
  })
  return new NestedWrites(relations, context.db, maxBulk).wrap(handlers)
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
