import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { createViewset, viewsetLogs } from 'fastify-viewsets'
import { instrumentViewsets } from 'fastify-viewsets/otel'
import { viewsetMetrics } from 'fastify-viewsets/metrics'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase, TestDialect } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'

// A LIST of books with their author (selectRelated) and tags (prefetchRelated): the README promises 1 + 2 statements.
const Author = Type.Object({ id: Type.Integer(), name: Type.String() })
const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
const Book = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  author_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  author: Type.Optional(Type.Union([Author, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})

const exporter = new InMemorySpanExporter()
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const otel = new FastifyOtelInstrumentation()
otel.setTracerProvider(provider)
let stop: () => void = () => {}

before(() => {
  provider.register()
  stop = instrumentViewsets({ tracer: provider.getTracer('fastify-viewsets') })
})
after(async () => {
  stop()
  await provider.shutdown()
})

async function createLibrary (database: TestDatabase): Promise<void> {
  const { db, dialect } = database
  const [idType, id] = autoIncrement(dialect)
  for (const table of ['authors', 'tags']) {
    await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
      .addColumn('name', 'varchar(255)', (column) => column.notNull()).execute()
  }
  await db.schema.createTable('books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(255)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.references('authors.id')).execute()
  await db.schema.createTable('book_tags')
    .addColumn('book_id', 'integer', (column) => column.notNull().references('books.id'))
    .addColumn('tag_id', 'integer', (column) => column.notNull().references('tags.id'))
    .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id']).execute()
  await db.insertInto('authors').values([{ name: 'Secret Author Ursula' }, { name: 'Secret Author Italo' }]).execute()
  await db.insertInto('tags').values([{ name: 'secret-tag-fiction' }, { name: 'secret-tag-poetry' }]).execute()
  await db.insertInto('books').values([
    { title: 'Secret Title One', author_id: 1 },
    { title: 'Secret Title Two', author_id: 2 },
    { title: 'Secret Title Three', author_id: 1 },
  ]).execute()
  await db.insertInto('book_tags').values([{ book_id: 1, tag_id: 1 }, { book_id: 1, tag_id: 2 }, { book_id: 3, tag_id: 2 }])
    .execute()
}

async function libraryApp (t: TestContext, dialect: TestDialect, logs?: string[], metrics = false) {
  const database = await testDatabase(t, dialect)
  await createLibrary(database)
  const stream = { write: (line: string) => { logs?.push(line) } }
  const app = testApp(t, logs === undefined ? {} : { logger: { level: 'info', stream } })
  await app.register(otel.plugin())
  if (logs !== undefined) await app.register(viewsetLogs)
  if (metrics) await app.register(viewsetMetrics)
  await app.register(createViewset({
    db: database.db,
    table: 'books',
    schema: Book,
    relatedConfig: {
      selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
      prefetchRelated: {
        tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' }, orderBy: 'name' },
      },
    },
  }), { prefix: '/books' })
  await app.ready()
  exporter.reset()
  return { app, ...database }
}

/** The spans of one trace, and its root (the request span of @fastify/otel). */
function traceOf (spans: ReadableSpan[]): { root: ReadableSpan, byId: Map<string, ReadableSpan> } {
  const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]))
  const roots = spans.filter((span) => span.parentSpanContext === undefined)
  assert.equal(roots.length, 1, `one request span: ${spans.map((span) => span.name).join(', ')}`)
  assert.equal(new Set(spans.map((span) => span.spanContext().traceId)).size, 1, 'one trace')
  return { root: roots[0] as ReadableSpan, byId }
}

function parentOf (span: ReadableSpan, byId: Map<string, ReadableSpan>): ReadableSpan | undefined {
  const id = span.parentSpanContext?.spanId
  return id === undefined ? undefined : byId.get(id)
}

const systems = { sqlite: 'sqlite', postgres: 'postgresql', mysql: 'mysql' }

for (const dialect of dialects) {
  describe(`observability on ${dialect.name}`, () => {
    test('a LIST with two relations: one request span, its handler span, exactly its 1 + 2 statement spans', async (t) => {
      const { app } = await libraryApp(t, dialect)
      const response = await app.inject({ method: 'GET', url: '/books' })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().length, 3)
      const spans = exporter.getFinishedSpans()
      const { root, byId } = traceOf(spans)
      const handlers = spans.filter((span) => span.name === 'LIST books')
      assert.equal(handlers.length, 1)
      const handler = handlers[0] as ReadableSpan
      assert.deepEqual(
        { ...handler.attributes },
        { 'fastify_viewsets.viewset': 'books', 'fastify_viewsets.method': 'LIST', 'http.route': '/books' }
      )
      let ancestor = parentOf(handler, byId)
      while (ancestor !== undefined && ancestor !== root) ancestor = parentOf(ancestor, byId)
      assert.equal(ancestor, root, 'the handler span descends from the request span')
      const statements = spans.filter((span) => span.kind === SpanKind.CLIENT)
      // The tags' statement reads tags through book_tags: its first table is either, by dialect.
      assert.deepEqual(statements.map((span) => span.name.replace('book_tags', 'tags')), ['SELECT books', 'SELECT authors', 'SELECT tags'])
      for (const span of statements) {
        assert.equal(parentOf(span, byId), handler, `${span.name} is a child of the handler span`)
        assert.equal(span.attributes['db.system.name'], systems[dialect.name])
        assert.equal(span.attributes['db.operation.name'], 'SELECT')
        assert.equal(span.attributes['db.collection.name'], span.name.slice('SELECT '.length))
        assert.equal(typeof span.attributes['db.query.text'], 'string')
        assert.equal(typeof span.attributes['fastify_viewsets.prepared'], 'boolean')
        assert.equal(span.status.code, SpanStatusCode.UNSET)
      }
      assert.deepEqual(statements.map((span) => span.attributes['db.response.returned_rows']), [3, 2, 3])
      const attributes = JSON.stringify(spans.map((span) => span.attributes))
      assert.doesNotMatch(attributes, /Secret|secret-tag/, 'no stored value reaches a span')
    })

    test('a GET by id: its statement text has a placeholder, never the id', async (t) => {
      const { app } = await libraryApp(t, dialect)
      const response = await app.inject({ method: 'GET', url: '/books/3' })
      assert.equal(response.statusCode, 200, response.body)
      const statements = exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.CLIENT)
      assert.equal(statements[0]?.name, 'SELECT books')
      const text = String(statements[0]?.attributes['db.query.text'])
      assert.match(text, /\$1|\?/)
      assert.doesNotMatch(text, /\b3\b/)
    })

    test('a failing write records the problem code on the handler span, and the statement span failed', async (t) => {
      const { app, db } = await libraryApp(t, dialect)
      const response = await app.inject({ method: 'POST', url: '/books', payload: { title: 'Orphan', author_id: 999 } })
      assert.equal(response.statusCode, 409, response.body)
      const { code } = response.json()
      assert.match(code, /^FST_VIEWSET_/)
      const spans = exporter.getFinishedSpans()
      const handler = spans.find((span) => span.name === 'POST books')
      assert.equal(handler?.attributes['error.type'], code)
      assert.equal(handler?.status.code, SpanStatusCode.UNSET, 'a 4xx is the client\'s error, not the server\'s')
      const failed = spans.filter((span) => span.kind === SpanKind.CLIENT && span.status.code === SpanStatusCode.ERROR)
      assert.equal(failed.length, 1)
      assert.equal(failed[0]?.attributes['db.operation.name'], 'INSERT')
      assert.doesNotMatch(JSON.stringify(spans.map((span) => span.attributes)), /Orphan|999/)
      const rows = await db.selectFrom('books').select('id').execute()
      assert.equal(rows.length, 3, 'nothing was written')
    })

    test('viewsetLogs: the completion line names the viewset, its method and its statements', async (t) => {
      const logs: string[] = []
      const { app } = await libraryApp(t, dialect, logs)
      assert.equal((await app.inject({ method: 'GET', url: '/books' })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: '/books/1' })).statusCode, 200)
      const conflict = await app.inject({ method: 'POST', url: '/books', payload: { title: 'Orphan', author_id: 999 } })
      assert.equal(conflict.statusCode, 409)
      const completed = logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request completed')
      assert.deepEqual(
        completed.map(({ viewset, viewsetMethod, statements, res }) =>
          ({ viewset, viewsetMethod, statements, status: res.statusCode })),
        [
          { viewset: 'books', viewsetMethod: 'LIST', statements: 3, status: 200 },
          { viewset: 'books', viewsetMethod: 'GET', statements: 3, status: 200 },
          { viewset: 'books', viewsetMethod: 'POST', statements: completed[2]?.statements, status: 409 },
        ]
      )
      assert.ok(completed[2]?.statements >= 1)
      assert.doesNotMatch(logs.join('\n'), /Orphan|Secret/)
    })

    test('viewsetMetrics: /metrics counts requests, their statements, and statements by operation', async (t) => {
      const { app, db } = await libraryApp(t, dialect, undefined, true)
      assert.equal((await app.inject({ method: 'GET', url: '/books' })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: '/books' })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: '/books/1' })).statusCode, 200)
      const created = await app.inject({ method: 'POST', url: '/books', payload: { title: 'New', author_id: 1 } })
      assert.equal(created.statusCode, 201, created.body)
      const response = await app.inject({ method: 'GET', url: '/metrics' })
      assert.equal(response.statusCode, 200)
      assert.match(String(response.headers['content-type']), /^text\/plain/)
      const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(response.body)?.[1])
      assert.equal(value('fastify_viewsets_request_duration_seconds_count{viewset="books",method="LIST"}'), 2)
      assert.equal(value('fastify_viewsets_request_duration_seconds_count{viewset="books",method="GET"}'), 1)
      assert.equal(value('fastify_viewsets_request_duration_seconds_count{viewset="books",method="POST"}'), 1)
      assert.equal(value('fastify_viewsets_request_statements_total{viewset="books",method="LIST"}'), 6)
      assert.equal(value('fastify_viewsets_request_statements_total{viewset="books",method="GET"}'), 3)
      const posted = value('fastify_viewsets_request_statements_total{viewset="books",method="POST"}')
      const selects = value(`fastify_viewsets_statement_duration_seconds_count{dialect="${dialect.name}",operation="select"}`)
      const inserts = value(`fastify_viewsets_statement_duration_seconds_count{dialect="${dialect.name}",operation="insert"}`)
      assert.equal(inserts, 1)
      assert.equal(selects + inserts, 9 + posted, 'every statement of a request is timed once')
      assert.doesNotMatch(response.body, /New|Secret/)
      assert.equal((await db.selectFrom('books').select('id').execute()).length, 4)
    })
  })
}
