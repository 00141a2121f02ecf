import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { createViewset, viewsetBatch, viewsetFrameworkErrors } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import {
  batchCorpus, bulkCorpus, changesCorpus, compositeCorpus, fixedCorpus, generatedCorpus, historyCorpus, nestedCorpus,
  softDeleteCorpus,
} from '../helpers/hostile-corpus.js'
import type { HostileRequest } from '../helpers/hostile-corpus.js'

// ---- the fixture: products → makers (selectRelated), products ← reviews (prefetchRelated) -----------
// Every table has a `secret` column that no schema serves; its value must never reach a response.

const secretValue = 'SECRET-COLUMN-VALUE'
const Maker = Type.Object({ id: Type.Integer(), name: Type.String() })
const Review = Type.Object({ id: Type.Integer(), body: Type.Union([Type.String(), Type.Null()]) })
const Product = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  price: Type.Optional(Type.Number({ minimum: 0 })),
  in_stock: Type.Optional(Type.Boolean()),
  maker_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  maker: Type.Optional(Type.Union([Maker, Type.Null()])),
  reviews: Type.Optional(Type.Array(Review)),
})
/** A link of a product to a tag: a composite key (product_id, tag), its string part free text. */
const ProductTag = Type.Object({
  product_id: Type.Integer(),
  tag: Type.String({ minLength: 1, maxLength: 100 }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
})
/** The keys a response object may have, by what it is. */
const allowedKeys = {
  product: new Set(Object.keys(Product.properties)),
  productTag: new Set(Object.keys(ProductTag.properties)),
  maker: new Set(Object.keys(Maker.properties)),
  review: new Set(Object.keys(Review.properties)),
}
const bodyLimit = 16 * 1024

async function createShop (database: TestDatabase) {
  const { db, dialect } = database
  const [idType, id] = autoIncrement(dialect)
  await db.schema
    .createTable('makers')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull())
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo(secretValue))
    .execute()
  await db.schema
    .createTable('products')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
    .addColumn('description', 'varchar(1024)')
    .addColumn('price', 'real', (column) => column.notNull().defaultTo(0))
    .addColumn('in_stock', 'boolean', (column) => column.notNull().defaultTo(true))
    .addColumn('maker_id', 'integer', (column) => column.references('makers.id'))
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo(secretValue))
    // What /archive (soft delete, issue 39) marks: a nullable timestamp in each dialect's spelling.
    .addColumn('deleted_at', sql.raw(dialect === 'postgres' ? 'timestamptz' : dialect === 'mysql' ? 'datetime(3)' : 'datetime'))
    .execute()
  await db.schema
    .createTable('reviews')
    .addColumn('id', idType as 'integer', id)
    .addColumn('product_id', 'integer', (column) => column.notNull().references('products.id'))
    .addColumn('body', 'varchar(255)')
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo(secretValue))
    .execute()
  await db.schema
    .createTable('product_tags')
    // No foreign key: products are served twice (/products, /archive), and the corpus is about the key's path.
    .addColumn('product_id', 'integer', (column) => column.notNull())
    .addColumn('tag', 'varchar(100)', (column) => column.notNull())
    .addColumn('note', 'varchar(100)')
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo(secretValue))
    .addPrimaryKeyConstraint('product_tags_pk', ['product_id', 'tag'])
    .execute()
  await db
    .insertInto('makers')
    .values([{ name: 'Acme' }, { name: 'Globex' }, { name: 'Initech' }])
    .execute()
  const products = Array.from({ length: 8 }, (_, i) => ({
    name: `product ${i + 1}`,
    price: i * 1.5,
    maker_id: i % 4 === 3 ? null : (i % 3) + 1,
  }))
  await db.insertInto('products').values(products).execute()
  // Product 1 has reviews (so it is never deleted: 409); product 8 has none.
  await db
    .insertInto('reviews')
    .values(
      [1, 1, 2, 3, 3, 3, 5].map((product, i) => ({ product_id: product, body: i % 2 === 0 ? `review ${i}` : null }))
    )
    .execute()
  await db.insertInto('product_tags').values([
    { product_id: 1, tag: 'red' }, { product_id: 1, tag: 'blue' }, { product_id: 2, tag: 're,d/x' },
  ]).execute()
  return { product: 1, bare: 8, ids: [1, 2, 3, 4, 5, 6, 7, 8] }
}

/**
 * Entries for changed_since to read beside those the corpus's writes record: products 1 to 3 created, and a product
 * 999 created and deleted (the history table is the viewset's, created at startup).
 */
async function seedHistory (db: TestDatabase['db']): Promise<void> {
  const stored = await db.selectFrom('products').selectAll().where('id', '<=', 3).orderBy('id').execute()
  const gone = { ...stored[0], id: 999, name: 'gone' }
  const entry = (id: number, before: unknown, after: unknown) => ({
    table_name: 'products',
    row_key: JSON.stringify({ id }),
    operation: after === null ? 'delete' : 'create',
    at: new Date().toISOString(),
    before: before === null ? null : JSON.stringify(before),
    after: after === null ? null : JSON.stringify(after),
  })
  await db.insertInto('viewset_history').values([
    ...stored.map((row) => entry(Number(row.id), null, row)), entry(999, null, gone), entry(999, gone, null),
  ]).execute()
}

/** The makers and reviews as their own viewsets write them: what nested writes of products go through. */
const MakerRow = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String({ maxLength: 255 }),
})
const ReviewRow = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  product_id: Type.Integer(),
  body: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
})

async function shopApp (t: Parameters<typeof testApp>[0], dialect: (typeof dialects)[number], nested = false) {
  const database = await testDatabase(t, dialect)
  const ids = await createShop(database)
  // frameworkErrors: URL errors that Fastify answers before routing come as problem+json too.
  const app = testApp(t, { bodyLimit, frameworkErrors: viewsetFrameworkErrors })
  if (nested) {
    await app.register(createViewset({ db: database.db, table: 'makers', schema: MakerRow }), { prefix: '/makers' })
    await app.register(createViewset({ db: database.db, table: 'reviews', schema: ReviewRow }), { prefix: '/reviews' })
  }
  await app.register(
    createViewset({
      db: database.db,
      table: 'products',
      schema: Product,
      maxLimit: 50,
      // The bulk writes too (issue 38 item 1): their filters, bodies and headers meet the corpus (bulkCorpus).
      methods: ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'HISTORY'],
      // Every write recorded (issue 39 item 3), and the history's route and `?as_of=` meet the corpus (historyCorpus).
      history: { createTable: true },
      searchFields: ['name', 'description'],
      orderingFields: ['name', 'price', 'id'],
      filterFields: {
        name: ['eq', 'contains', 'in'],
        price: ['gte', 'lte', 'in'],
        in_stock: ['eq'],
        maker_id: ['eq', 'in', 'isnull'],
      },
      relatedConfig: {
        selectRelated: { maker: { table: 'makers', foreignKey: 'maker_id', writable: nested } },
        prefetchRelated: { reviews: { table: 'reviews', foreignKey: 'product_id', writable: nested } },
      },
      ...(nested ? { maxBulk: 20 } : {}),
      // changed_since (issue 40, item 5) over that history, and the entries seedHistory adds.
      changes: true,
    }),
    { prefix: '/products' }
  )
  await app.register(createViewset({ db: database.db, table: 'product_tags', schema: ProductTag }), {
    prefix: '/product-tags',
  })
  if (!nested) {
    // Soft delete's routes (issue 39 item 2) over the same rows: nobody may see deleted rows.
    await app.register(createViewset({
      db: database.db,
      table: 'products',
      schema: Product,
      softDelete: { column: 'deleted_at', showDeleted: () => false },
      methods: ['LIST', 'GET', 'DELETE', 'RESTORE', 'PURGE'],
      relatedConfig: {
        selectRelated: { maker: { table: 'makers', foreignKey: 'maker_id' } },
        prefetchRelated: { reviews: { table: 'reviews', foreignKey: 'product_id' } },
      },
    }), { prefix: '/archive' })
  }
  // The atomic batch reaches the same routes: its corpus must not get past them either.
  await app.register(viewsetBatch())
  await app.ready()
  await seedHistory(database.db)
  return { app, ...database, ids }
}

// ---- what every answer must satisfy ------------------------------------------------------------

/** Words of SQL, driver errors and stack traces; none may appear in an error body (beyond the client's own input). */
const leak =
  /\b(select|insert|update|delete|drop|union|syntax|sqlite\w*|postgres\w*|pg_\w+|mysql\w*|mariadb|ER_[A-Z_]+|SQLSTATE|relation|violates|duplicate key|kysely|better-sqlite3|node_modules|stack|secret)\b|\bat \S+ \(|\.[cm]?[jt]s:\d+|\w+Error\b/i

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Every string the client sent: query keys and values, path segments, body keys and strings. */
function inputsOf (request: HostileRequest): string[] {
  const inputs: string[] = [request.method]
  const [path = '', search = ''] = request.url.split('?')
  // A composite key's parts too (`/product-tags/1,<part>`): an error may echo one part the client sent.
  for (const segment of path.split('/').flatMap((whole) => [whole, ...whole.split(',')])) {
    inputs.push(segment)
    try {
      inputs.push(decodeURIComponent(segment))
    } catch {
      // not decodable: the raw segment is enough
    }
  }
  for (const [key, value] of new URLSearchParams(search)) inputs.push(key, value, ...value.split(','))
  const walk = (value: unknown): void => {
    if (typeof value === 'string') inputs.push(value, ...value.split(','))
    else if (typeof value === 'number') inputs.push(String(value))
    else if (Array.isArray(value)) value.forEach(walk)
    else if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        inputs.push(key)
        walk(child)
      }
    }
  }
  if (typeof request.body === 'string') {
    try {
      walk(JSON.parse(request.body))
    } catch {
      inputs.push(request.body)
    }
  }
  if (request.contentType !== undefined && request.contentType !== null) inputs.push(request.contentType)
  // Longest first, so that a payload is removed whole before its parts.
  return [...new Set(inputs.filter((input) => input.length > 0))].sort((a, b) => b.length - a.length)
}

function withoutInputs (text: string, inputs: readonly string[]): string {
  let rest = text
  for (const input of inputs) {
    rest = rest.split(input).join(' ')
    rest = rest.split(JSON.stringify(input).slice(1, -1)).join(' ')
  }
  return rest
}

/** Whether a value is an object (a stored version of a history entry, not its `null`). */
function isObject (value: unknown): value is object {
  return typeof value === 'object' && value !== null
}

/** Keys outside the schema, anywhere in a 2xx body. */
function foreignKeys (body: unknown, kind: 'product' | 'productTag'): string[] {
  const found: string[] = []
  const check = (object: unknown, kind: keyof typeof allowedKeys) => {
    if (typeof object !== 'object' || object === null) return
    for (const key of Object.keys(object)) if (!allowedKeys[kind].has(key)) found.push(`${kind}.${key}`)
    const product = object as Record<string, unknown>
    if (kind === 'product') {
      check(product.maker, 'maker')
      if (Array.isArray(product.reviews)) for (const review of product.reviews) check(review, 'review')
    }
  }
  // A page of changes (changed_since): its rows are products, its deleted keys objects of the key alone.
  if (typeof body === 'object' && body !== null && 'changes' in body && 'deleted' in body &&
    Array.isArray(body.changes) && Array.isArray(body.deleted)) {
    for (const product of body.changes) check(product, 'product')
    for (const key of body.deleted) for (const name of Object.keys(key)) if (name !== 'id') found.push(`key.${name}`)
    return found
  }
  // A write by filter answers how many rows it changed.
  const affected = typeof body === 'object' && body !== null && !Array.isArray(body) &&
    Object.keys(body).length === 1 && 'affected' in body && Number.isInteger(body.affected)
  if (affected) return found
  for (const product of Array.isArray(body) ? body : [body]) check(product, kind)
  return found
}

/** What is wrong with one answer, or nothing. */
function faults (
  request: HostileRequest,
  response: LightMyRequestResponse,
  dialect: string,
  changed: boolean
): string[] {
  const problems: string[] = []
  const status = response.statusCode
  const expected = typeof request.expect === 'function' ? request.expect(dialect) : request.expect
  if (status >= 500) problems.push(`answered ${status}`)
  if (expected !== undefined && status !== expected) problems.push(`expected ${expected}, got ${status}`)
  if (response.body.includes(secretValue)) problems.push('the secret column leaked')
  if (status >= 400 && request.method === 'HEAD') {
    // A HEAD answer has no body; its headers still say what the body would be.
    if (!String(response.headers['content-type']).startsWith('application/problem+json')) {
      problems.push(`an error as ${String(response.headers['content-type'])}`)
    }
    if (changed) problems.push('a 4xx changed the rows')
  } else if (status >= 400) {
    const type = String(response.headers['content-type'])
    if (!type.startsWith('application/problem+json')) problems.push(`an error as ${type}`)
    let body: Record<string, unknown> = {}
    try {
      body = response.json()
    } catch {
      problems.push('an error body that is not JSON')
    }
    if (
      body.status !== status ||
      typeof body.code !== 'string' ||
      !/^FST_VIEWSET_[A-Z_]+$/.test(body.code) ||
      typeof body.detail !== 'string' ||
      typeof body.title !== 'string'
    ) {
      problems.push(`not a problem body: ${response.body.slice(0, 200)}`)
    }
    const text = withoutInputs(
      [
        body.title,
        body.detail,
        ...(Array.isArray(body.errors)
          ? body.errors.flatMap((error: Record<string, unknown>) => [error.message, error.field])
          : []),
      ].join(' | '),
      inputsOf(request)
    )
    const match = leak.exec(text)
    if (match !== null) problems.push(`error text leaks ${JSON.stringify(match[0])}: ${text.slice(0, 300)}`)
    if (changed) problems.push('a 4xx changed the rows')
  } else if (status < 300) {
    const writes = request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS'
    if (changed && !writes) problems.push(`a ${request.method} changed the rows`)
    if (response.body !== '' && request.method !== 'HEAD') {
      const answered: unknown = response.json()
      // A batch's rows are its results' bodies; a history's, the versions its entries carry (issue 39).
      const entries = /^\/products\/[^/?]+\/history/.test(request.url) && Array.isArray(answered) ? answered : undefined
      const body: unknown = request.url === '/batch' && typeof answered === 'object' && answered !== null &&
        'results' in answered && Array.isArray(answered.results)
        ? answered.results.flatMap((result: { body: unknown }) => result.body ?? [])
        : entries?.flatMap((entry: Record<string, unknown>) => [entry.before, entry.after].filter(isObject)) ?? answered
      for (const entry of entries ?? []) {
        const keys = Object.keys(entry).sort().join()
        if (keys !== 'actor,after,at,before,operation') problems.push(`a history entry with ${keys}`)
      }
      const foreign = foreignKeys(body, request.url.startsWith('/product-tags') ? 'productTag' : 'product')
      if (foreign.length > 0) problems.push(`fields outside the schema: ${foreign.join(', ')}`)
      // Strings are stored and answered as sent: nothing in them was interpreted.
      if (request.sent !== undefined && writes && typeof body === 'object' && body !== null) {
        for (const field of ['name', 'description'] as const) {
          const sent = request.sent[field]
          // A lone surrogate is not Unicode: drivers store some replacement of it.
          if (
            typeof sent === 'string' &&
            !loneSurrogate.test(sent) &&
            (body as Record<string, unknown>)[field] !== sent
          ) {
            problems.push(
              `${field} came back as ${JSON.stringify((body as Record<string, unknown>)[field])?.slice(0, 80)}, sent ${JSON.stringify(sent).slice(0, 80)}`
            )
          }
        }
      }
    }
  }
  return problems
}

async function snapshot (db: TestDatabase['db']): Promise<string> {
  const tables = await Promise.all(
    ['makers', 'products', 'reviews', 'product_tags'].map(
      async (table) => await db.selectFrom(table).selectAll().orderBy(table === 'product_tags' ? 'tag' : 'id').execute()
    )
  )
  return JSON.stringify(tables)
}

for (const dialect of dialects) {
  describe(`hostile input on ${dialect.name}`, () => {
    test('a fixed and a generated corpus against every route: no 5xx, problem+json without SQL or driver text, 4xx change no rows, no column outside the schema', async (t) => {
      await hostileRun(t, dialect, false)
    })

    test('nested bodies (writable relations): no 5xx, no leak, a 4xx writes nothing, not even a parent', async (t) => {
      await hostileRun(t, dialect, true)
    })
  })
}

async function hostileRun (t: TestContext, dialect: (typeof dialects)[number], nested: boolean) {
  const { app, db, ids } = await shopApp(t, dialect, nested)
  const seed = Number(process.env.FC_SEED ?? 20261121)
  // Review 3 is of product 2.
  const corpus = nested
    ? nestedCorpus({ product: ids.product, foreignReview: 3 }, 20)
    : [
        ...fixedCorpus({ product: ids.product, bare: ids.bare }, bodyLimit),
        ...changesCorpus(),
        ...generatedCorpus(ids.ids, 250, seed),
        ...batchCorpus({ product: ids.product, bare: ids.bare }, 100, seed),
        ...compositeCorpus(ids.product),
        ...softDeleteCorpus({ product: ids.product, bare: ids.bare }),
        ...bulkCorpus({ product: ids.product, bare: ids.bare }, 150, seed),
        ...historyCorpus({ product: ids.product }),
      ]
  const statuses: Record<number, number> = {}
  const failures: string[] = []
  let before = await snapshot(db)
  const started = performance.now()
  for (const request of corpus) {
    const headers: Record<string, string> = { ...request.headers }
    const contentType =
          request.contentType === undefined
            ? request.body === undefined
              ? undefined
              : 'application/json'
            : request.contentType
    if (contentType !== undefined && contentType !== null) headers['content-type'] = contentType
    const response = await app.inject({
      method: request.method,
      url: request.url,
      headers,
      ...(request.body === undefined ? {} : { payload: request.body }),
    })
    const after = await snapshot(db)
    statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
    for (const problem of faults(request, response, dialect.name, after !== before)) {
      failures.push(`${request.label}: ${problem}`)
    }
    before = after
  }
  const seconds = (performance.now() - started) / 1000
  t.diagnostic(
        `${corpus.length} requests (fast-check seed ${seed}) in ${seconds.toFixed(1)} s; statuses ${JSON.stringify(statuses)}`
  )
  assert.ok(corpus.length >= 200)
  assert.deepEqual(failures.slice(0, 40), [], `${failures.length} failures`)
}
