import type { FastifyInstance } from 'fastify'
import type { RelationLink } from '../relations/relation-link.js'
import type { ViewsetComponents } from '../schema/components.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import { whenAllRegistered } from './registry.js'

// The documented row and partial row of a viewset, once the application is ready and every table's rules are known
// (mount/relation-rules.ts): a to-one relation whose table has a row or field rule may be `null` for a caller, and
// the related rows of a table with a field rule may lack any field but their key.

/** Whether a schema admits `null` already (a `Type.Union([Row, Type.Null()])` relation). */
function admitsNull (schema: JsonSchema): boolean {
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true
  return Array.isArray(schema.anyOf) && schema.anyOf.some((member) => isRecord(member) && admitsNull(member))
}

/** A related row's schema (or a list's, or a union's members) under its table's rules, recursively. */
function ruledRow (schema: JsonSchema, link: RelationLink): JsonSchema {
  if (schema.type === 'array' && isRecord(schema.items)) return { ...schema, items: ruledRow(schema.items, link) }
  if (Array.isArray(schema.anyOf)) {
    return { ...schema, anyOf: schema.anyOf.map((member) => (isRecord(member) ? ruledRow(member, link) : member)) }
  }
  if (schema.type !== 'object') return schema
  const { required: _required, ...rest } = schema
  const properties = ruledProperties(propertiesOf(schema), link.links)
  // Under a field rule, any field of the related row may be hidden from the caller: none is sure to be sent.
  return link.rules.target.hasFieldRule ? { ...rest, properties } : { ...schema, properties }
}

/** The relation fields of `properties` under their tables' rules: a ruled to-one one nullable. */
function ruledProperties (
  properties: Record<string, JsonSchema>,
  links: ReadonlyMap<string, RelationLink>
): Record<string, JsonSchema> {
  const ruled: Record<string, JsonSchema> = { ...properties }
  for (const [field, link] of links) {
    const property = properties[field]
    if (property === undefined) continue
    const row = ruledRow(property, link)
    const hideable = link.kind === 'many-to-one' && link.rules.target.hasRule && !admitsNull(row)
    ruled[field] = hideable ? { anyOf: [row, { type: 'null' }] } : row
  }
  return ruled
}

/**
 * Rewrites a viewset's documented row and partial row (and their copies `addSchema` stored in `fastify`) so that
 * their relation fields say what a caller may be served under the related tables' rules: when the application is
 * ready, after the rules are resolved (registered after them) and before any document is built.
 *
 * @example
 * ```ts
 * documentRelationRules(fastify, context.schemas.components, planned.relations?.links)
 * ```
 */
export function documentRelationRules (
  fastify: FastifyInstance,
  { row, partial }: Pick<ViewsetComponents, 'row' | 'partial'>,
  links: ReadonlyMap<string, RelationLink> | undefined
): void {
  if (links !== undefined) whenAllRegistered(fastify, () => { rewrite(fastify, [row, partial], links) })
}

/** The rewriting of {@link documentRelationRules}, once the rules are known. */
function rewrite (fastify: FastifyInstance, schemas: readonly JsonSchema[], links: ReadonlyMap<string, RelationLink>) {
  for (const schema of schemas) {
    const stored: unknown = typeof schema.$id === 'string' ? fastify.getSchema(schema.$id) : undefined
    for (const component of isRecord(stored) && stored !== schema ? [schema, stored] : [schema]) {
      // The component's own properties object is replaced, never its members: they are shared with the entity.
      component.properties = ruledProperties(propertiesOf(component), links)
    }
  }
}
