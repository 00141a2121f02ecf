import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { orderByPattern, parseOrderBy, Viewset, ViewsetErrors, viewsetDocs } from 'fastify-viewsets'
import type { CreateRequest, ListRequest, UpdateRequest } from 'fastify-viewsets'
import { exampleApp } from '../shared.js'
import type { BuildOptions } from '../shared.js'
import { migrate } from './migrations.js'

export const Item = Type.Object(
  {
    id: Type.Optional(Type.Integer({ readOnly: true })),
    // `\S`: a name of spaces only would be empty once stripped.
    name: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '\\S',
      description: 'Unique; surrounding whitespace is stripped',
    }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
    created_at: Type.Optional(
      Type.String({ format: 'date-time', readOnly: true, description: 'Set by the database (UTC)' })
    ),
  },
  { description: 'An item' }
)
export type Item = Static<typeof Item>

export interface DB {
  items: { id: Generated<number>; name: string; description: string | null; created_at: Generated<string> }
}

/** The fields `order_by` accepts. */
export const orderingFields = ['name', 'created_at'] as const

/** LIST's own query parameters: validated (`?limit=abc` is a 400) and shown in /docs. */
export const ItemListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Rows per page' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Rows to skip' })),
  // Bounded as the generated LIST's `search` is (maxSearchLength, 100 by default): a longer one is a 400.
  search: Type.Optional(Type.String({ maxLength: 100, description: 'Case-insensitive substring of the name' })),
  // parseOrderBy's pattern: only the allowed fields, each once (a repeated or unknown key is a 400).
  order_by: Type.Optional(
    Type.String({
      default: '-created_at',
      pattern: orderByPattern(orderingFields),
      description: `Comma-separated sort keys among ${orderingFields.join(', ')}, each once; ` +
        'a leading `-` sorts descending',
    })
  ),
})
/** The query string once validated: the defaults are filled in. */
// A type literal or an interface: ListRequest<T> takes either (ListRequest<typeof ItemListQuery> derives it).
export type ItemListQuery = { limit: number; offset: number; search?: string; order_by: string }

export const ItemStats = Type.Object(
  {
    count: Type.Integer({ description: 'How many items there are' }),
    newest: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the newest item was created',
    }),
  },
  { description: 'Statistics of the items' }
)

function stripName<T extends { name?: unknown }> (values: T): T {
  return typeof values.name === 'string' ? { ...values, name: values.name.trim() } : values
}

/** Items with a hand-written LIST and CREATE, and a custom route next to the generated ones. */
export class ItemViewset extends Viewset<DB, 'items', typeof Item> {
  static override listQuery = ItemListQuery

  override async list (request: ListRequest<ItemListQuery>) {
    const { limit, offset, search, order_by: orderBy } = request.query
    // this.query(): SELECT of the schema's columns, typed for the table.
    let query = this.query().limit(limit).offset(offset)
    if (search !== undefined && search !== '') query = query.where((eb) => this.contains(eb.ref('name'), search))
    // The library's own parser: known fields, each once, then the id, which breaks ties so that pages neither
    // overlap nor skip rows. Anything else is a 400 FST_VIEWSET_UNSUPPORTED_ORDERING, before any statement runs.
    for (const { field, descending } of parseOrderBy(orderBy, orderingFields, 'id')) {
      query = query.orderBy(field, descending ? 'desc' : 'asc')
    }
    return await query.execute()
  }

  override async createElement (request: CreateRequest<typeof Item>) {
    // writable() keeps the fields that were sent, minus the read-only ones (id, created_at).
    const values = stripName(this.writable(request.body))
    return await this.#uniqueName(async () => await this.transaction(async (trx) => await this.insert(values, trx)))
  }

  override async updateElement (request: UpdateRequest<typeof Item>) {
    const values = stripName(this.writable(request.body))
    // this.precondition(request): If-Match, checked with the write (a stale ETag answers 412).
    return await this.#uniqueName(
      async () =>
        (await this.update(request.params.id, values, this.db, this.precondition(request))) ??
        this.notFound(request.params.id)
    )
  }

  override customRoutes (fastify: FastifyInstance) {
    // Same scope as the CRUD routes: same prefix, problem+json errors and validation.
    fastify.get(
      '/stats',
      {
        schema: {
          operationId: 'itemStats',
          summary: 'Count the items and date the newest',
          tags: ['items'],
          response: { 200: ItemStats },
        },
      },
      async () => {
        const row = await this.readDb
          .selectFrom('items')
          .select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.max('created_at').as('newest')])
          .executeTakeFirstOrThrow()
        // pg answers count(*) as a string and dates as Date; SQLite stores the date as text.
        return { count: Number(row.count), newest: row.newest === null ? null : new Date(row.newest).toISOString() }
      }
    )
  }

  /** A duplicate name rolls the write back and answers 409 with a detail that says so. */
  async #uniqueName<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write()
    } catch (error) {
      if (this.classify(error)?.kind === 'unique') {
        throw new ViewsetErrors.Conflict('an item with that name already exists')
      }
      throw error
    }
  }
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: BuildOptions<DB> = {}): Promise<FastifyInstance> {
  const { app, db } = await exampleApp(options, migrate)
  // Before the routes: @fastify/swagger collects routes as they are added.
  await app.register(viewsetDocs, { title: 'Items API', version: '1.0.0' })
  await app.register(new ItemViewset({ db, table: 'items', schema: Item, tags: ['items'] }).register(), {
    prefix: '/items',
  })
  return app
}
