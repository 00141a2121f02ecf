import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import { testApp } from '../helpers/app.js'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'

// Issue 35's property: no status, body or header a caller gets depends on a row or field its rules hide. With random
// tenants, random rules (a row scope per owner, random hidden fields on both tables) and random requests (LIST with
// filters, search, ordering, fields, count, offset and cursor pages; GET; the to-one relation), every answer of the
// full database equals the answer of the same request over a database holding only what the caller may see: its rows,
// and a schema without the fields hidden from it. Keys are written explicitly, so that they are equal on both sides.

const owners = ['alice', 'bob', 'carol'] as const
const docFields = ['title', 'secret', 'score'] as const
const Project = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })

/** The docs schema without `hidden`, its project relation's without `hiddenProject`. */
function docSchema (hidden: readonly string[], hiddenProject: readonly string[]): TObject {
  const project = Type.Object(Object.fromEntries(Object.entries(Project.properties)
    .filter(([name]) => !hiddenProject.includes(name))))
  const properties = Object.fromEntries(Object.entries({
    id: Type.Integer(),
    owner: Type.String(),
    title: Type.String(),
    secret: Type.String(),
    score: Type.Integer(),
    project_id: Type.Union([Type.Integer(), Type.Null()]),
    project: Type.Optional(Type.Union([project, Type.Null()])),
  }).filter(([name]) => !hidden.includes(name)))
  return Type.Object(properties)
}

/** The LIST options of docs, without the names `visible` refuses. */
function listOptions (visible: (name: string) => boolean) {
  const filterFields = Object.fromEntries(Object.entries({
    title: ['eq', 'contains'], secret: ['eq'], score: ['gte', 'lt'], 'project.name': ['contains'],
  }).filter(([name]) => visible(name)))
  const orderingFields = ['id', 'title', 'secret', 'score'].filter(visible)
  const searchFields = ['title', 'secret'].filter(visible)
  return { filterFields, orderingFields, ...(searchFields.length > 0 ? { searchFields } : {}) }
}

/** Reads only: the keys are written by the test (MySQL could not read back a POST of a key it does not generate). */
const reads = ['LIST', 'GET']

interface Rules { hidden: string[], hiddenProject: string[] }

/** Creates docs and projects under `prefix` (the full tables, or a caller's mirror). */
async function createTables ({ db }: TestDatabase, prefix: string): Promise<void> {
  await db.schema.createTable(`${prefix}projects`).addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('name', 'varchar(16)', (column) => column.notNull())
    .addColumn('owner', 'varchar(16)', (column) => column.notNull()).execute()
  await db.schema.createTable(`${prefix}docs`).addColumn('id', 'integer', (column) => column.primaryKey())
    .addColumn('owner', 'varchar(16)', (column) => column.notNull())
    .addColumn('title', 'varchar(16)', (column) => column.notNull())
    .addColumn('secret', 'varchar(16)', (column) => column.notNull())
    .addColumn('score', 'integer', (column) => column.notNull())
    .addColumn('project_id', 'integer').execute()
}

/** The full app: both tables ruled by owner, their fields by the current `rules`. */
async function fullApp (t: Parameters<typeof testApp>[0], database: TestDatabase, rules: Rules) {
  const app = testApp(t)
  await app.register(fastifyJwt, { secret: 'property-secret-that-is-long-enough-for-hs256' })
  const scope = (eb: any, { token }: { token: { sub?: string } | null }) => eb('owner', '=', token?.sub ?? '')
  await app.register(createViewset({
    db: database.db, table: 'projects', schema: Project, scope, methods: reads, fieldAccess: () => ({ hidden: rules.hiddenProject }),
  } as never), { prefix: '/projects' })
  const docs = {
    db: database.db,
    table: 'docs',
    methods: reads,
    schema: docSchema([], []),
    scope,
    fieldAccess: () => ({ hidden: rules.hidden }),
    relatedConfig: { selectRelated: { project: { table: 'projects', foreignKey: 'project_id' } } },
    ...listOptions(() => true),
  }
  await app.register(createViewset(docs as never), { prefix: '/docs' })
  await app.register(createViewset({ ...docs, pagination: 'cursor' } as never), { prefix: '/pages' })
  await app.ready()
  return app
}

/** The caller's mirror: only its rows, a schema without its hidden fields, no rule at all. */
async function mirrorApp (t: Parameters<typeof testApp>[0], database: TestDatabase, rules: Rules) {
  const app = testApp(t)
  const visible = (name: string) => !rules.hidden.includes(name) &&
    !(name === 'project.name' && rules.hiddenProject.includes('name'))
  const docs = {
    db: database.db,
    table: 'm_docs',
    methods: reads,
    schema: docSchema(rules.hidden, rules.hiddenProject),
    relatedConfig: { selectRelated: { project: { table: 'm_projects', foreignKey: 'project_id' } } },
    ...listOptions(visible),
  }
  await app.register(createViewset(docs as never), { prefix: '/docs' })
  await app.register(createViewset({ ...docs, pagination: 'cursor' } as never), { prefix: '/pages' })
  await app.ready()
  return app
}

const text = fc.stringMatching(/^[ab]{0,2}$/)
const row = fc.record({
  owner: fc.constantFrom(...owners),
  title: text,
  secret: text,
  score: fc.integer({ min: 0, max: 3 }),
  project_id: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
})
const projectRow = fc.record({ owner: fc.constantFrom(...owners), name: text })
const fieldList = fc.subarray(['id', 'owner', 'title', 'secret', 'score', 'project_id', 'project'], { minLength: 1 })
const listQuery = fc.record({
  title__contains: fc.option(text, { nil: undefined }),
  secret: fc.option(text, { nil: undefined }),
  score__gte: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  'project.name__contains': fc.option(text, { nil: undefined }),
  search: fc.option(text, { nil: undefined }),
  order_by: fc.option(fc.constantFrom('title', '-score', 'secret', 'score,-title'), { nil: undefined }),
  fields: fc.option(fieldList.map((names) => names.join(',')), { nil: undefined }),
  count: fc.option(fc.constant('true'), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 3 }),
})
const request = fc.oneof(
  fc.record({ kind: fc.constant('list' as const), query: listQuery, offset: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('pages' as const), query: listQuery, offset: fc.constant(0) }),
  fc.record({
    kind: fc.constant('get' as const),
    id: fc.integer({ min: 1, max: 8 }),
    fields: fc.option(fieldList.map((names) => names.join(',')), { nil: undefined }),
  })
)

/** One generated request. */
type Generated = typeof request extends fc.Arbitrary<infer R> ? R : never

/** The URL of a generated request. */
function urlOf (generated: Generated): string {
  if (generated.kind === 'get') {
    return `/docs/${String(generated.id)}${generated.fields === undefined ? '' : `?fields=${generated.fields}`}`
  }
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(generated.query)) if (value !== undefined) query.set(name, String(value))
  if (generated.kind === 'list' && generated.offset > 0) query.set('offset', String(generated.offset))
  return `/${generated.kind === 'list' ? 'docs' : 'pages'}?${query.toString()}`
}

/** What a response says, that must not depend on hidden data. */
function answer (response: Awaited<ReturnType<FastifyInstance['inject']>>) {
  const { headers } = response
  return {
    status: response.statusCode,
    body: response.body,
    type: headers['content-type'],
    total: headers['x-total-count'],
    link: headers.link,
    etag: headers.etag,
  }
}

for (const dialect of dialects) {
  describe(`policies property (${dialect.name})`, () => {
    test('every answer equals the answer over only the caller-visible rows and fields', async (t) => {
      const database = await testDatabase(t, dialect)
      await createTables(database, '')
      await createTables(database, 'm_')
      const rules: Rules = { hidden: [], hiddenProject: [] }
      const full = await fullApp(t, database, rules)
      const mirrors = new Map<string, FastifyInstance>()
      const { db } = database
      await fc.assert(fc.asyncProperty(
        fc.array(row, { maxLength: 7 }),
        fc.array(projectRow, { minLength: 4, maxLength: 4 }),
        fc.constantFrom(...owners),
        fc.subarray([...docFields]),
        fc.subarray(['name']),
        fc.array(request, { minLength: 1, maxLength: 4 }),
        async (docs, projects, caller, hidden, hiddenProject, requests) => {
          for (const table of ['docs', 'projects', 'm_docs', 'm_projects']) await db.deleteFrom(table).execute()
          const docRows = docs.map((doc, index) => ({ id: index + 1, ...doc }))
          const projectRows = projects.map((project, index) => ({ id: index + 1, ...project }))
          if (docRows.length > 0) await db.insertInto('docs').values(docRows).execute()
          await db.insertInto('projects').values(projectRows).execute()
          const mine = docRows.filter((doc) => doc.owner === caller)
          if (mine.length > 0) await db.insertInto('m_docs').values(mine).execute()
          const minePro = projectRows.filter((project) => project.owner === caller)
          if (minePro.length > 0) await db.insertInto('m_projects').values(minePro).execute()
          rules.hidden = hidden
          rules.hiddenProject = hiddenProject
          const key = `${hidden.join(',')}|${hiddenProject.join(',')}`
          let mirror = mirrors.get(key)
          if (mirror === undefined) {
            mirror = await mirrorApp(t, database, { hidden, hiddenProject })
            mirrors.set(key, mirror)
          }
          const authorization = `Bearer ${full.jwt.sign({ sub: caller })}`
          for (const generated of requests) {
            let url: string | undefined = urlOf(generated)
            // A cursor list is followed one page on: the next link of either side must serve the same page.
            for (let page = 0; url !== undefined && page < 2; page++) {
              const got = answer(await full.inject({ url, headers: { authorization } }))
              const expected = answer(await mirror.inject({ url }))
              assert.deepEqual(got, expected, url)
              const next = /<([^>]*)>; rel="next"/.exec(String(got.link ?? ''))?.[1]
              const followed = next === undefined ? undefined : new URL(next, 'http://x')
              url = generated.kind === 'pages' && followed !== undefined ? followed.pathname + followed.search : undefined
            }
          }
        }
      ), { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) })
    })
  })
}
