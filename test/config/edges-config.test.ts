import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify'
import { createViewset, Viewset, viewsetDocs, ViewsetErrors } from 'fastify-viewsets'
import type { ElementRequest, ViewsetToken } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import type { ItemsDB } from '../helpers/items.js'

// Relation schemas for the unknown-key checks: they fail before any table is read, so none is created.
const Publisher = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object(
  { id: Type.Integer(), title: Type.String(), publisher: Type.Union([Publisher, Type.Null()]) },
  { relatedConfig: { selectRelated: { publisher: { table: 'publishers', foriegnKey: 'publisher_id' } } } }
)
const Tag = Type.Object({ id: Type.Integer(), label: Type.String() })
const Author = Type.Object({ id: Type.Integer(), name: Type.String(), books: Type.Array(Book) })
const Tagged = Type.Object({ id: Type.Integer(), title: Type.String(), tags: Type.Array(Tag) })

async function itemsDatabase (t: TestContext, dialect: TestDialect) {
  const database = await testDatabase(t, dialect)
  await createItemsTable(database)
  return database
}

for (const dialect of dialects) {
  describe(`configuration edges on ${dialect.name}`, () => {
    test('an unknown option key throws synchronously, names the key and suggests the valid one', async (t) => {
      const database = await itemsDatabase(t, dialect)
      const { db } = database
      const typo = { db, table: 'items', schema: Item, protectMethods: ['POST'] }
      assert.throws(() => createViewset(typo as never), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: 'Invalid viewset option protectMethods: unknown key; did you mean protectedMethods?',
      })
      assert.throws(() => new Viewset(typo as never), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /protectMethods: unknown key; did you mean protectedMethods\?/,
      })
      assert.throws(() => createViewset({ db, table: 'items', schema: Item, colour: 'red' } as never), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message: /option colour: unknown key; the keys are db, readDb, table/,
      })

      // Spelled right, the same options protect POST.
      const app = testApp(t)
      await app.register(
        createViewset({
          db,
          table: 'items',
          schema: Item,
          protectedMethods: ['POST'],
          authenticate: () => ({ sub: 'x' }),
        }),
        { prefix: '/items' }
      )
      const open = await app.inject({ method: 'POST', url: '/items', payload: { name: 'Bread' } })
      assert.equal(open.statusCode, 401)
      assert.equal(problemOf(open).code, 'FST_VIEWSET_UNAUTHORIZED')
      assert.equal((await app.inject('/items')).statusCode, 200)
    })

    test('unknown keys of relatedConfig, its entries and their through fail at construction, at any depth', async (t) => {
      const { db } = await testDatabase(t, dialect)
      const through = (extra: Record<string, unknown>) => ({
        table: 'book_tags',
        sourceKey: 'book_id',
        targetKey: 'tag_id',
        ...extra,
      })
      const tagged = (entry: Record<string, unknown>, config: Record<string, unknown> = {}) =>
        createViewset({
          db,
          table: 'books',
          schema: Tagged,
          relatedConfig: { prefetchRelated: { tags: { table: 'tags', ...entry } }, ...config },
        } as never)
      assert.throws(() => tagged({ throught: through({}) }), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message:
          'Invalid viewset option relatedConfig.prefetchRelated.tags.throught: unknown key; did you mean through?',
      })
      assert.throws(() => tagged({ through: through({ targetKy: 'x' }) }), {
        message:
          /option relatedConfig\.prefetchRelated\.tags\.through\.targetKy: unknown key; did you mean targetKey\?/,
      })
      assert.throws(() => tagged({ through: through({}) }, { selectRelate: {} }), {
        message: /option relatedConfig\.selectRelate: unknown key; did you mean selectRelated\?/,
      })
      assert.throws(() => tagged({ through: through({}), oderBy: 'label' }), { message: /did you mean orderBy\?/ })

      // Attached to the schema, two levels down: Author → books (attached) → publisher (attached to Book).
      const AttachedAuthor = Type.Object(Author.properties, {
        relatedConfig: { prefetchRelated: { books: { table: 'books', foreignKey: 'author_id' } } },
      })
      assert.throws(() => new Viewset({ db, table: 'authors', schema: AttachedAuthor } as never), {
        code: 'FST_VIEWSET_INVALID_OPTION',
        message:
          'Invalid viewset option relatedConfig.prefetchRelated.books.relatedConfig.selectRelated.publisher.foriegnKey: unknown key; did you mean foreignKey?',
      })
      // A nested relatedConfig given in the entry, as an option.
      assert.throws(
        () =>
          createViewset({
            db,
            table: 'authors',
            schema: Author,
            relatedConfig: {
              prefetchRelated: {
                books: {
                  table: 'books',
                  foreignKey: 'author_id',
                  relatedConfig: {
                    selectRelated: { publisher: { table: 'publishers', foreignKey: 'publisher_id', refrences: 'id' } },
                  },
                },
              },
            },
          } as never),
        {
          message:
            /relatedConfig\.prefetchRelated\.books\.relatedConfig\.selectRelated\.publisher\.refrences: unknown key; did you mean references\?/,
        }
      )
    })

    test('a static listQuery that the default list does not read fails at startup; refining its own parameters is allowed', async (t) => {
      const database = await itemsDatabase(t, dialect)
      class Unread extends Viewset<any, 'items', typeof Item> {
        static override listQuery = Type.Object({
          q: Type.Optional(Type.String()),
          limit: Type.Optional(Type.Integer()),
        })
      }
      const broken = testApp(t)
      await assert.rejects(
        async () => {
          await broken.register(new Unread({ db: database.db, table: 'items', schema: Item }).register(), {
            prefix: '/items',
          })
          await broken.ready()
        },
        { code: 'FST_VIEWSET_INVALID_OPTION', message: /option listQuery: q would be ignored/ }
      )

      class Refined extends Viewset<any, 'items', typeof Item> {
        static override listQuery = Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2, default: 2 })),
        })
      }
      const app = testApp(t)
      await app.register(new Refined({ db: database.db, table: 'items', schema: Item }).register(), {
        prefix: '/items',
      })
      await database.db
        .insertInto('items')
        .values([{ name: 'a' }, { name: 'b' }, { name: 'c' }])
        .execute()
      const page = await app.inject('/items')
      assert.equal(page.statusCode, 200)
      assert.equal(page.json().length, 2)
      const tooMany = await app.inject('/items?limit=3')
      assert.equal(tooMany.statusCode, 400)
      assert.equal(problemOf(tooMany).code, 'FST_VIEWSET_VALIDATION')
    })

    test('Type.Readonly, Type.ReadonlyOptional and readOnly on a union or a branch are never required nor written', async (t) => {
      const database = await itemsDatabase(t, dialect)
      const Guarded = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        name: Type.String(),
        description: Type.Optional(Type.Union([Type.String({ readOnly: true }), Type.Null()])),
        price: Type.Readonly(Type.Number()),
        in_stock: Type.ReadonlyOptional(Type.Boolean()),
        secret: Type.Optional(Type.Union([Type.String(), Type.Null()], { readOnly: true })),
      })
      const app = testApp(t)
      await app.register(viewsetDocs, { title: 'Edges', version: '1.0.0' })
      await app.register(createViewset({ db: database.db, table: 'items', schema: Guarded, name: 'Guarded' }), {
        prefix: '/items',
      })

      const hostile = { name: 'Bread', description: 'mass assigned', price: 99, in_stock: false, secret: 'pwned' }
      const created = await app.inject({ method: 'POST', url: '/items', payload: hostile })
      assert.equal(created.statusCode, 201, created.body)
      const body = created.json()
      assert.deepEqual(
        { description: body.description, price: body.price, in_stock: body.in_stock, secret: body.secret },
        { description: null, price: 0, in_stock: true, secret: 's3cr3t' }
      )
      const stored = await database.db
        .selectFrom('items')
        .selectAll()
        .where('id', '=', body.id)
        .executeTakeFirstOrThrow()
      assert.deepEqual(
        [stored.description, Number(stored.price), Boolean(stored.in_stock), stored.secret],
        [null, 0, true, 's3cr3t']
      )

      // `price` is in the schema's required list, yet read-only: POST and PUT need only `name`.
      const put = await app.inject({ method: 'PUT', url: `/items/${String(body.id)}`, payload: { name: 'Cake' } })
      assert.equal(put.statusCode, 200, put.body)
      const patched = await app.inject({
        method: 'PATCH',
        url: `/items/${String(body.id)}`,
        payload: { ...hostile, name: 'Pie' },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(
        [patched.json().name, patched.json().description, patched.json().price, patched.json().secret],
        ['Pie', null, 0, 's3cr3t']
      )

      const document = (await app.inject('/docs/json')).json()
      const properties = document.components.schemas.Guarded.properties
      for (const field of ['id', 'description', 'price', 'in_stock', 'secret']) {
        assert.equal(properties[field].readOnly, true, field)
      }
      assert.equal(properties.name.readOnly, undefined)
    })

    test('error constructors take the detail they are given, with a default when omitted', async (t) => {
      const database = await itemsDatabase(t, dialect)
      const thrown: Record<string, () => Error> = {
        1: () => new ViewsetErrors.NotFound('no such book'),
        2: () => new ViewsetErrors.NotFound(),
        3: () => new ViewsetErrors.Forbidden('not your review'),
        4: () => new ViewsetErrors.Unavailable('auth down'),
        5: () => new ViewsetErrors.Unauthorized('the session expired'),
        6: () => new ViewsetErrors.Conflict('a book with that ISBN exists'),
        7: () => new ViewsetErrors.BadRequest('pick a shelf first'),
        8: () => new ViewsetErrors.InvalidValue('the year is too far ahead'),
        9: () => new ViewsetErrors.Validation('title is taken', [{ in: 'body', field: 'title', message: 'is taken' }]),
        10: () => new ViewsetErrors.UnsupportedOrdering('"rating"', 'title, year'),
        // a JavaScript caller may pass one
        11: () => new (ViewsetErrors.Internal as unknown as new (detail: string) => Error)('password=hunter2'),
        12: () => new ViewsetErrors.Forbidden(),
        13: () => new ViewsetErrors.Unavailable(),
      }
      class Throwing extends Viewset<any, 'items', typeof Item> {
        override async getElement (request: ElementRequest, reply: FastifyReply, token: ViewsetToken | null) {
          const make = thrown[String(request.params.id)]
          if (make !== undefined) throw make()
          return await super.getElement(request, reply, token)
        }
      }
      const app = testApp(t)
      await app.register(new Throwing({ db: database.db, table: 'items', schema: Item }).register(), {
        prefix: '/items',
      })
      const expected: Array<[number, number, string, string]> = [
        [1, 404, 'FST_VIEWSET_NOT_FOUND', 'no such book'],
        [2, 404, 'FST_VIEWSET_NOT_FOUND', 'No such row'],
        [3, 403, 'FST_VIEWSET_FORBIDDEN', 'not your review'],
        [4, 503, 'FST_VIEWSET_UNAVAILABLE', 'auth down'],
        [5, 401, 'FST_VIEWSET_UNAUTHORIZED', 'the session expired'],
        [6, 409, 'FST_VIEWSET_CONFLICT', 'a book with that ISBN exists'],
        [7, 400, 'FST_VIEWSET_BAD_REQUEST', 'pick a shelf first'],
        [8, 400, 'FST_VIEWSET_INVALID_VALUE', 'the year is too far ahead'],
        [9, 400, 'FST_VIEWSET_VALIDATION', 'title is taken'],
        [
          10,
          400,
          'FST_VIEWSET_UNSUPPORTED_ORDERING',
          'Unsupported ordering "rating": the allowed fields are title, year (a leading - sorts descending)',
        ],
        [11, 500, 'FST_VIEWSET_INTERNAL', 'An unexpected error occurred'],
        [12, 403, 'FST_VIEWSET_FORBIDDEN', 'The token does not allow this operation'],
        [13, 503, 'FST_VIEWSET_UNAVAILABLE', 'The database is unavailable, try again later'],
        [999, 404, 'FST_VIEWSET_NOT_FOUND', 'No row with id = 999'],
      ]
      for (const [id, status, code, detail] of expected) {
        const response = await app.inject(`/items/${id}`)
        assert.equal(response.statusCode, status, `id ${id}`)
        const problem = problemOf(response)
        assert.deepEqual([problem.code, problem.detail], [code, detail], `id ${id}`)
        if (id === 9) assert.deepEqual(problem.errors, [{ in: 'body', field: 'title', message: 'is taken' }])
        if (status === 503) assert.equal(response.headers['retry-after'], '1')
      }
    })

    test('a validation answer lists at most 50 errors, counts the rest and keeps its detail under 1,000 characters', async (t) => {
      const database = await itemsDatabase(t, dialect)
      const app = testApp(t)
      await app.register(createViewset({ db: database.db, table: 'items', schema: Item }), { prefix: '/items' })

      const payload: Record<string, unknown> = { name: 'Bread' }
      for (let i = 0; i < 5000; i++) payload[`unknown_${'x'.repeat(40)}_${i}`] = i
      const response = await app.inject({ method: 'POST', url: '/items', payload })
      assert.equal(response.statusCode, 400)
      const problem = problemOf(response) as ReturnType<typeof problemOf> & { errorsOmitted?: number }
      assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
      assert.equal(problem.errors?.length, 50)
      assert.equal(problem.errorsOmitted, 4950)
      assert.ok(problem.detail.length <= 1000, `detail is ${problem.detail.length} characters`)
      assert.match(problem.detail, /^The request is not valid: unknown_x+_0 is not a field of this resource/)
      assert.ok(response.body.length < 10_000, `body is ${response.body.length} bytes`)

      // A few failing fields: every one listed, no errorsOmitted.
      const few = await app.inject({ method: 'POST', url: '/items', payload: { name: '', price: -1 } })
      assert.equal(few.statusCode, 400)
      const fewProblem = problemOf(few) as ReturnType<typeof problemOf> & { errorsOmitted?: number }
      assert.equal(fewProblem.errors?.length, 2)
      assert.equal('errorsOmitted' in fewProblem, false)
      assert.equal(await database.db.selectFrom('items').select('id').executeTakeFirst(), undefined)
    })

    test('a schema that breaks JSON Schema, or that the serializer cannot write, fails at startup', async (t) => {
      const database = await itemsDatabase(t, dialect)
      const failsAtStartup = async (plugin: FastifyPluginAsync, message: RegExp) => {
        const app = testApp(t)
        await assert.rejects(async () => {
          await app.register(plugin, { prefix: '/items' })
          await app.ready()
        }, { message })
      }
      // A body: the row's own schema, from which the write bodies are derived.
      const badRow = Type.Object({
        id: Type.Optional(Type.Integer({ readOnly: true })),
        name: Type.String({ maxLength: -1 }),
      })
      await failsAtStartup(createViewset({ db: database.db, table: 'items', schema: badRow }),
        /schema is invalid: data\/properties\/name\/maxLength must be >= 0/)

      // A custom route's query: Ajv's coercing instance compiles it.
      class Custom extends Viewset<ItemsDB, 'items', typeof Item> {
        override customRoutes (fastify: FastifyInstance): void {
          fastify.get(
            '/by-rank',
            { schema: { querystring: { type: 'object', properties: { rank: { type: 'integer', minimum: 'one' } } } } },
            async () => ({})
          )
        }
      }
      await failsAtStartup(new Custom({ db: database.db, table: 'items', schema: Item }).register(),
        /schema is invalid: data\/properties\/rank\/minimum must be number/)

      // Read-only, so no body validates it: only the serializer reads it, and it is compiled at registration.
      const unwritable = Type.Object({
        ...Item.properties,
        description: Type.Optional(Type.Unsafe<string>({ readOnly: true, $ref: 'Missing#' })),
      })
      await failsAtStartup(createViewset({ db: database.db, table: 'items', schema: unwritable }),
        /Cannot resolve ref "Missing#"/)

      // A `required` that is not a list, on a field: the serializer's schema keeps it (it drops well-formed ones), so
      // its check at registration names it, though the write bodies' validators compile on first use.
      const misrequired = Type.Object({
        ...Item.properties,
        description: Type.Optional(Type.Union([Type.Unsafe<string>({ type: 'string', required: 'text' }), Type.Null()])),
      })
      await failsAtStartup(createViewset({ db: database.db, table: 'items', schema: misrequired }),
        /schema is invalid: data\/properties\/description\/required must be array/)
    })
  })
}
