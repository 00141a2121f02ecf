import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance } from 'fastify'
import { createViewset, viewsetDocs, viewsetIndexReport } from 'fastify-viewsets'
import { costOf } from '../../lib/execution/cost-class.js'
import { childCount } from '../../lib/query/child-counts.js'
import type { RelationLink } from '../../lib/relations/relation-link.js'
import type { Row } from '../../lib/sql.js'
import type { Kysely } from 'kysely'
import { compileOnlySqlite, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { problemOf, testApp } from '../helpers/app.js'
import {
  owned, Project, projectRelations, secret, seedTenants, Tag, Task, taskRelations,
} from '../helpers/tenants.js'
import type { TenantsDB } from '../helpers/tenants.js'

// Issue 37 item 7: counts of to-many relations as filterable and orderable values (`tasks.count`, `tags.count`),
// computed in the page's statement and counting only the related rows the caller's rules admit. Two tenants own rows
// under the same parents: alice's counts never include bob's tasks or tags, nor bob's hers.
//
// Projects (owner; alice's tasks / every task): 1 a-proj (alice; 3 / 4), 2 b-proj (bob; bob sees 1 / 2),
// 3 z-proj (alice; 1 / 4), 4 c-proj (alice; 0 / 1), 5 d-proj (alice; 2 / 3).
// Tags per task as alice counts them: task 6 two (a-tag and a-tag-2), tasks 1, 2 and 5 one (b-tag is bob's), the
// others none.

/** More tasks, projects and tags than seedTenants plants, so that every project's counts differ with the rule. */
async function moreRows (db: Kysely<TenantsDB>): Promise<void> {
  await db.insertInto('projects').values([{ name: 'c-proj', owner: 'alice' }, { name: 'd-proj', owner: 'alice' }])
    .execute()
  await db.insertInto('tags').values([{ name: 'a-tag-2', owner: 'alice' }]).execute()
  const task = (title: string, owner: string, project: number) =>
    ({ title, secret: '', owner, project_id: project })
  await db.insertInto('tasks').values([
    task('a-task-6', 'alice', 1), task('a-task-7', 'alice', 1),
    task('b-task-8', 'bob', 3), task('b-task-9', 'bob', 3), task('b-task-10', 'bob', 3),
    task('b-task-11', 'bob', 4),
    task('a-task-12', 'alice', 5), task('a-task-13', 'alice', 5), task('b-task-14', 'bob', 5),
  ]).execute()
  await db.insertInto('task_tags').values([{ task_id: 6, tag_id: 1 }, { task_id: 6, tag_id: 3 }]).execute()
}

const countOptions = {
  projects: {
    filterFields: { name: ['eq'], 'tasks.count': ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin'] },
    orderingFields: ['name', 'tasks.count'],
  },
  tasks: { filterFields: { 'tags.count': ['eq', 'gte'] }, orderingFields: ['tags.count'] },
}

interface CountsApp {
  app: FastifyInstance
  alice: { authorization: string }
  bob: { authorization: string }
  queries: string[]
}

/** The tenants' app with counts enabled, OpenAPI registered first; options merged over each viewset's. */
async function countsApp (
  t: TestContext,
  dialect: TestDialect,
  options: { projects?: Record<string, unknown>; tasks?: Record<string, unknown>; index?: boolean } = {}
): Promise<CountsApp> {
  const database = await testDatabase(t, dialect)
  await seedTenants(database, dialect)
  const db = database.db as Kysely<TenantsDB>
  await moreRows(db)
  if (options.index === true) {
    await db.schema.createIndex('tasks_project_id').on('tasks').column('project_id').execute()
    await db.schema.createIndex('task_tags_task_id').on('task_tags').column('task_id').execute()
  }
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  await app.register(viewsetDocs)
  const projects = { ...countOptions.projects, ...options.projects }
  const tasks = { ...countOptions.tasks, ...options.tasks }
  await app.register(createViewset({
    db, ...owned('projects', Project), relatedConfig: projectRelations, ...projects,
  } as never), { prefix: '/projects' })
  await app.register(createViewset({ db, ...owned('tasks', Task), relatedConfig: taskRelations, ...tasks } as never),
    { prefix: '/tasks' })
  await app.register(createViewset({ db, ...owned('tags', Tag) } as never), { prefix: '/tags' })
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { app, alice: bearer('alice'), bob: bearer('bob'), queries: database.queries }
}

/** The ids a LIST answers (200 asserted). */
async function ids (app: FastifyInstance, url: string, headers: Record<string, string>): Promise<number[]> {
  const response = await app.inject({ url, headers })
  assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
  return response.json().map((row: { id: number }) => row.id)
}

/** The problem of a request that must be a 400 naming `field`. */
async function badRequest (app: FastifyInstance, url: string, headers: Record<string, string>, field: string) {
  const response = await app.inject({ url, headers })
  assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
  const problem = problemOf(response)
  assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
  assert.ok(problem.errors?.some((error) => error.field.includes(field)), JSON.stringify(problem))
  return problem
}

/** The startup failure of the tenants' app with these options. */
async function startupError (t: TestContext, dialect: TestDialect, options: Parameters<typeof countsApp>[2]) {
  const error = await countsApp(t, dialect, options).then(() => undefined, (error: unknown) => error)
  assert.ok(error instanceof Error, 'the app started')
  assert.equal((error as { code?: string }).code, 'FST_VIEWSET_INVALID_OPTION')
  return error.message
}

for (const dialect of dialects) {
  describe(`child counts (${dialect.name})`, () => {
    test('filters by a one-to-many count, counting only the caller\'s rows', async (t) => {
      const { app, alice, bob } = await countsApp(t, dialect)
      // Without the rule, projects 1, 3 and 5 have at least 3 tasks; alice counts 3, 1 and 2.
      assert.deepEqual(await ids(app, '/projects?tasks.count__gte=2', alice), [1, 5])
      assert.deepEqual(await ids(app, '/projects?tasks.count=1', alice), [3])
      assert.deepEqual(await ids(app, '/projects?tasks.count__eq=0', alice), [4])
      assert.deepEqual(await ids(app, '/projects?tasks.count__ne=0', alice), [1, 3, 5])
      assert.deepEqual(await ids(app, '/projects?tasks.count__gt=2', alice), [1])
      assert.deepEqual(await ids(app, '/projects?tasks.count__lt=2', alice), [3, 4])
      assert.deepEqual(await ids(app, '/projects?tasks.count__lte=2&tasks.count__gte=1', alice), [3, 5])
      assert.deepEqual(await ids(app, '/projects?tasks.count__in=0,3', alice), [1, 4])
      assert.deepEqual(await ids(app, '/projects?tasks.count__nin=0,3', alice), [3, 5])
      // bob sees project 2 only, with his one task in it (alice's task 2 is there too).
      assert.deepEqual(await ids(app, '/projects?tasks.count=1', bob), [2])
      assert.deepEqual(await ids(app, '/projects?tasks.count__gte=2', bob), [])
      // The count header counts the same set.
      const counted = await app.inject({ url: '/projects?tasks.count__gte=1&count=true', headers: alice })
      assert.equal(counted.headers['x-total-count'], '3')
      assert.deepEqual(counted.json().map((row: { id: number }) => row.id), [1, 3, 5])
      // The loaded relation is alice's tasks, and a count filter loads nothing it was not asked to.
      const loaded = await app.inject({ url: '/projects?tasks.count=3', headers: alice })
      assert.deepEqual(loaded.json()[0].tasks.map((task: { id: number }) => task.id), [1, 6, 7])
    })

    test('filters by a many-to-many count, under the related table\'s rule', async (t) => {
      const { app, alice, bob } = await countsApp(t, dialect)
      // Every seeded task carries a-tag and b-tag: alice counts one of them, bob the other.
      assert.deepEqual(await ids(app, '/tasks?tags.count__gte=2', alice), [6])
      assert.deepEqual(await ids(app, '/tasks?tags.count=1', alice), [1, 2, 5])
      assert.deepEqual(await ids(app, '/tasks?tags.count=0', alice), [7, 12, 13])
      assert.deepEqual(await ids(app, '/tasks?tags.count=1', bob), [3, 4])
      assert.deepEqual(await ids(app, '/tasks?tags.count__gte=2', bob), [])
    })

    test('counts in OR groups and under not.', async (t) => {
      const { app, alice } = await countsApp(t, dialect)
      assert.deepEqual(await ids(app, '/projects?or=(tasks.count__gte.3,name.c-proj)', alice), [1, 4])
      assert.deepEqual(await ids(app, '/projects?or=(tasks.count.0,tasks.count__in.(1,2))', alice), [3, 4, 5])
      assert.deepEqual(await ids(app, '/projects?not.or=(tasks.count__gte.2)', alice), [3, 4])
      assert.deepEqual(await ids(app, '/projects?and=(not.tasks.count.0,tasks.count__lt.3)', alice), [3, 5])
      const counted = await app.inject({ url: '/projects?or=(tasks.count.0,tasks.count.3)&count=true', headers: alice })
      assert.equal(counted.headers['x-total-count'], '2')
      // A term's value is checked as the plain filter's is.
      await badRequest(app, '/projects?or=(tasks.count__gte.many,name.x)', alice, 'tasks.count__gte')
    })

    test('orders by a count, each caller by its own rows', async (t) => {
      const { app, alice, bob } = await countsApp(t, dialect)
      // Without the rule, 1 and 3 would tie at 4 tasks, then 5 (3) and 4 (1).
      assert.deepEqual(await ids(app, '/projects?order_by=-tasks.count', alice), [1, 5, 3, 4])
      assert.deepEqual(await ids(app, '/projects?order_by=tasks.count', alice), [4, 3, 5, 1])
      assert.deepEqual(await ids(app, '/projects?order_by=-tasks.count&tasks.count__gte=1&limit=2', alice), [1, 5])
      assert.deepEqual(await ids(app, '/projects?order_by=-tasks.count', bob), [2])
      assert.deepEqual(await ids(app, '/tasks?order_by=-tags.count', alice), [6, 1, 2, 5, 7, 12, 13])
      // A tie keeps the key's order, on every dialect.
      assert.deepEqual(await ids(app, '/tasks?order_by=tags.count', alice), [7, 12, 13, 1, 2, 5, 6])
    })

    test('cursor pages walk a count order both ways, with count=true', async (t) => {
      const { app, alice } = await countsApp(t, dialect, { projects: { pagination: 'cursor' } })
      // Descending count then ascending key (an expanded keyset), and ascending both (one row-value comparison).
      for (const [order, expected] of [['-tasks.count', [1, 5, 3, 4]], ['tasks.count', [4, 3, 5, 1]]] as const) {
        const seen: number[] = []
        let url: string | undefined = `/projects?order_by=${order}&limit=1&count=true`
        let last = ''
        while (url !== undefined) {
          const response: Awaited<ReturnType<typeof app.inject>> = await app.inject({ url, headers: alice })
          assert.equal(response.statusCode, 200, response.body)
          assert.equal(response.headers['x-total-count'], '4')
          seen.push(...response.json().map((row: { id: number }) => row.id))
          last = url
          url = /<([^>]+)>; rel="next"/.exec(String(response.headers.link))?.[1]
        }
        assert.deepEqual(seen, expected, order)
        // Back from the last page: the one before it.
        const lastPage = await app.inject({ url: last, headers: alice })
        const prev = /<([^>]+)>; rel="prev"/.exec(String(lastPage.headers.link))?.[1]
        assert.ok(prev !== undefined)
        assert.deepEqual(await ids(app, prev, alice), [expected[2]])
      }
      // A cursor made for the count order is refused for another one.
      const first = await app.inject({ url: '/projects?order_by=-tasks.count&limit=1', headers: alice })
      const next = /cursor=([^&>]+)/.exec(String(first.headers.link))?.[1]
      const wrong = await app.inject({ url: `/projects?order_by=tasks.count&cursor=${next ?? ''}`, headers: alice })
      assert.equal(wrong.statusCode, 400)
      assert.equal(problemOf(wrong).code, 'FST_VIEWSET_INVALID_CURSOR')
    })

    test('a count is typed: a non-integer value is a 400, nothing read', async (t) => {
      const { app, alice, queries } = await countsApp(t, dialect)
      queries.length = 0
      await badRequest(app, '/projects?tasks.count__gte=two', alice, 'tasks.count__gte')
      await badRequest(app, '/projects?tasks.count__in=1,x', alice, 'tasks.count__in')
      await badRequest(app, '/projects?tasks.count__contains=1', alice, 'tasks.count__contains')
      assert.deepEqual(queries.filter((text) => /tasks/.test(text)), [])
    })

    test('a relation hidden from the caller is an unknown name in filters and ordering', async (t) => {
      const fieldAccess = ({ token }: { token: { sub?: string } | null }) =>
        token?.sub === 'bob' ? { hidden: ['tasks'] } : {}
      const { app, alice, bob } = await countsApp(t, dialect, { projects: { fieldAccess } })
      assert.deepEqual(await ids(app, '/projects?tasks.count__gte=2', alice), [1, 5])
      await badRequest(app, '/projects?tasks.count__gte=1', bob, 'tasks.count__gte')
      await badRequest(app, '/projects?or=(tasks.count__gte.1)', bob, 'tasks.count__gte')
      const ordered = await app.inject({ url: '/projects?order_by=-tasks.count', headers: bob })
      assert.equal(ordered.statusCode, 400)
      assert.deepEqual(await ids(app, '/projects?order_by=-name', bob), [2])
    })

    test('OpenAPI types the count parameters as integers and lists the count among the sort keys', async (t) => {
      const { app } = await countsApp(t, dialect)
      const document = (await app.inject('/docs/json')).json()
      const parameters: Array<{ name: string; schema: { type?: string; pattern?: string } }> =
        document.paths['/projects'].get.parameters
      const named = (name: string) => parameters.find((parameter) => parameter.name === name)
      assert.equal(named('tasks.count__gte')?.schema.type, 'integer')
      assert.equal(named('tasks.count')?.schema.type, 'integer')
      assert.equal(named('tasks.count__in')?.schema.type, 'string')
      assert.ok(new RegExp(named('order_by')?.schema.pattern ?? '^$').test('-tasks.count,name'))
    })

    test('the index report names each count, and whether an index serves it', async (t) => {
      const report = async (index: boolean) => {
        const { app } = await countsApp(t, dialect, { index })
        return viewsetIndexReport(app).filter((entry) => entry.field.endsWith('.count'))
      }
      const indexed = await report(true)
      assert.deepEqual(indexed.map((entry) => `${entry.viewset} ${entry.field} ${entry.use}`).sort(), [
        '/projects tasks.count filter', '/projects tasks.count ordering', '/tasks tags.count filter',
        '/tasks tags.count ordering',
      ])
      for (const entry of indexed) assert.match(entry.reason, /subquery \(an index of "(tasks|task_tags)" starting/)
      // MySQL indexes a foreign key itself (tasks.project_id); the join table has none.
      const unindexed = await report(false)
      const scans = unindexed.filter((entry) => /each count scans it/.test(entry.reason))
      assert.deepEqual([...new Set(scans.map((entry) => entry.field))].sort(),
        dialect.name === 'mysql' ? ['tags.count'] : ['tags.count', 'tasks.count'])
    })

    test('startup fails on a count of a to-one relation, through a relation, or with a non-numeric operator', async (t) => {
      assert.match(await startupError(t, dialect, { tasks: { filterFields: { 'project.count': ['eq'] } } }),
        /filterFields.*"project\.count": "project" is a selectRelated \(to-one\) relation/)
      assert.match(await startupError(t, dialect, { tasks: { orderingFields: ['project.count'] } }),
        /orderingFields.*"project\.count"/)
      assert.match(await startupError(t, dialect, { projects: { filterFields: { 'tasks.tags.count': ['eq'] } } }),
        /"tasks\.tags\.count": a count is of one of this viewset's own to-many relations \(tasks\.count\)/)
      for (const op of ['isnull', 'contains', 'startswith']) {
        assert.match(await startupError(t, dialect, { projects: { filterFields: { 'tasks.count': [op] } } }),
          new RegExp(`"tasks\\.count": operator "${op}" does not apply to a count`))
      }
      assert.match(await startupError(t, dialect, { projects: { filterFields: { 'nope.count': ['eq'] } } }),
        /"nope" is not a configured relation/)
    })
  })
}

test('a page with a count is a heavy statement (a correlated subquery per row)', () => {
  const db = compileOnlySqlite<Record<string, Row>>()
  const link = {
    field: 'books',
    kind: 'one-to-many',
    table: 'books',
    parentColumn: 'id',
    targetColumn: 'author_id',
    through: undefined,
    columns: ['id'],
    links: new Map(),
    rules: {},
  } as unknown as RelationLink
  const page = db.selectFrom('authors').selectAll().where((eb) => eb(childCount(link, 'authors'), '>=', 3))
  const compiled = page.compile()
  assert.match(compiled.sql, /\(select count\(\*\) as "count" from "books" as "viewset_r1" where "viewset_r1"."author_id" = "authors"."id"\) >= \?/)
  assert.equal(costOf(compiled.query), 'heavy')
})
