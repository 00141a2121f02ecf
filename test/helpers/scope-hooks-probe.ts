// Run by test/scope-hooks.test.ts in a process of its own (the promise hooks, once on, stay on for the
// process): registers one viewset of the kind named by argv[2] over PROBE_DATABASE_URL, then prints
// whether the request scope rides on every promise.
import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { ListRequest, ViewsetToken } from 'fastify-viewsets'
import type { FastifyReply } from 'fastify'
import { cancellationRidesOnPromises } from '../../lib/execution/cancellation.js'
import { Item } from './items.js'
import type { ItemsDB } from './items.js'

const kind = process.argv[2]
const db = createDatabase<ItemsDB>(process.env.PROBE_DATABASE_URL)
const app = Fastify()

class ListOverride extends Viewset<ItemsDB, 'items', typeof Item> {
  override async list (request: ListRequest<unknown>, reply: FastifyReply, token: ViewsetToken | null) {
    return await super.list(request, reply, token)
  }
}

class CustomRoute extends Viewset<ItemsDB, 'items', typeof Item> {
  override customRoutes (fastify: FastifyInstance) {
    fastify.get('/cheapest', async () => await this.query().orderBy('price').limit(1).execute())
  }
}

// The rules below read no token.
const options = { db, table: 'items', schema: Item, withoutTokens: true } as const
const viewsets = {
  'generated routes only': () => createViewset(options),
  'a scope option': () => createViewset({ ...options, scope: (eb) => eb('price', '>=', 0) }),
  'a beforeWrite option': () => createViewset({ ...options, beforeWrite: (values) => values }),
  'a fieldAccess option': () => createViewset({ ...options, fieldAccess: () => ({ hidden: ['price'] }) }),
  // A field rule that awaits may query before it answers: its first promise turns the hooks on.
  'a fieldAccess that awaits': () => createViewset({ ...options, fieldAccess: async () => ({ hidden: ['price'] }) }),
  'an overridden handler': () => new ListOverride(options).register(),
  'a custom route': () => new CustomRoute(options).register(),
}
const viewset = viewsets[kind as keyof typeof viewsets]
if (viewset === undefined) throw new Error(`unknown kind ${String(kind)}`)
await app.register(viewset(), { prefix: '/items' })
await app.ready()
const listed = await app.inject('/items')
process.stdout.write(JSON.stringify({ status: listed.statusCode, hooks: cancellationRidesOnPromises() }))
await app.close()
await db.destroy()
