import type { FastifyPluginAsync } from 'fastify'
import type { CheckedSchema, SchemaOf, ViewsetOptions } from './options.js'
import type { RelatedConfig } from './relations/config.js'
import { Viewset } from './viewset.js'

/**
 * Turns a table and a TypeBox schema into a REST resource: `createViewset(o)` is `new Viewset(o).register(o.methods)`.
 * Every option that needs no database is checked here, synchronously.
 *
 * @example
 * ```ts
 * const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
 * await app.register(createViewset({ db, table: 'items', schema: Item, tags: ['items'] }), { prefix: '/items' })
 * ```
 */
export function createViewset<
  DB,
  TB extends keyof DB & string,
  S extends SchemaOf<DB, TB, S>,
  R extends RelatedConfig<DB> = Record<never, never>
> (options: ViewsetOptions<DB, TB, S, R> & CheckedSchema<DB, TB, S, R>): FastifyPluginAsync {
  return new Viewset<DB, TB, S, R>(options).register(options.methods)
}
