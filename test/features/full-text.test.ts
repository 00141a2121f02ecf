import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { costOf } from '../../lib/execution/cost-class.js'
import type { Row } from '../../lib/sql.js'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { createViewset, fieldAccessByRole, viewsetDocs } from 'fastify-viewsets'
import { sqliteFullText } from '../../lib/dialect/sqlite/sqlite-full-text.js'
import { postgresFullText } from '../../lib/dialect/postgres/postgres-full-text.js'
import { mysqlFullText } from '../../lib/dialect/mysql/mysql-full-text.js'
import { testApp, problemOf } from '../helpers/app.js'
import { compileOnlySqlite, dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { owned, ownerRule, secret, seedTenants, TaskRow, tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB } from '../helpers/tenants.js'

// Full-text search (issue 37, item 5): `?q=` over `fullText: { fields }`, served by each database's own index (the
// README's migration, run here as the app would run it), every word required, relevance the default order.

const seams = { sqlite: sqliteFullText, postgres: postgresFullText, mysql: mysqlFullText }

/** The tasks' words: alice owns 1, 2 and 5, bob 3 and 4 (test/helpers/tenants.ts). */
const words: Record<number, { title: string, secret: string }> = {
  1: { title: 'fresh bread daily', secret: 'rye flour' },
  2: { title: 'bread and butter', secret: 'salted' },
  3: { title: 'bread bread bread', secret: 'rye secret' },
  4: { title: 'butter knife', secret: 'steel' },
  5: { title: 'rye bread loaf rye', secret: 'sourdough rye' },
}

const index = { table: 'tasks', key: 'id', fields: ['title', 'secret'], language: 'simple', ftsTable: 'tasks_fts' }

/** Runs the README's migration of the tasks' full-text index, one statement at a time. */
async function createIndex (db: Kysely<TenantsDB>, dialect: TestDialect): Promise<void> {
  for (const statement of seams[dialect.name].migration(index).split('\n')) await sql.raw(statement).execute(db)
}

/** Gives the seeded tasks their words. */
async function reword (db: Kysely<TenantsDB>): Promise<void> {
  for (const [id, row] of Object.entries(words)) {
    await db.updateTable('tasks').set(row).where('id', '=', Number(id)).execute()
  }
}

const roleOf = (token: Record<string, unknown> | null) => String(token?.role ?? '')

/** The tenants' app with `?q=` on tasks' title and secret; support staff may not read `secret`. */
async function searchApp (
  t: TestContext,
  dialect: TestDialect,
  tasks: Record<string, unknown> = {},
  change?: (db: Kysely<TenantsDB>) => Promise<void>
) {
  const tenants = await tenantsApp(t, dialect, {
    prepare: async (db) => {
      await reword(db)
      await change?.(db)
      await createIndex(db, dialect)
    },
    tasks: {
      fullText: { fields: ['title', 'secret'] },
      filterFields: { project_id: ['eq'] },
      searchFields: ['title'],
      orderingFields: ['title'],
      fieldAccess: fieldAccessByRole({ admin: {}, support: { hidden: ['secret'] } }, roleOf, {}),
      ...tasks,
    },
  })
  const bearer = (sub: string, role: string) => ({ authorization: `Bearer ${tenants.app.jwt.sign({ sub, role })}` })
  return { ...tenants, support: bearer('alice', 'support') }
}

const ids = (body: Array<{ id: number }>) => body.map((row) => row.id)

/** Deletes bob's tasks, so that a viewset without a row rule answers alice's rows only. */
async function aliceOnly (db: Kysely<TenantsDB>): Promise<void> {
  await db.deleteFrom('task_tags').where('task_id', 'in', [3, 4]).execute()
  await db.deleteFrom('tasks').where('owner', '=', 'bob').execute()
}

/** The page and its Link header, as a client reads them. */
async function answer (app: TenantsApp['app'], url: string, headers: Record<string, string>) {
  const response = await app.inject({ url, headers })
  return { status: response.statusCode, body: response.json(), link: response.headers.link }
}

/** Follows rel="next" from `url`, the ids of every page in order. */
async function walk (app: TenantsApp['app'], url: string, headers: Record<string, string>): Promise<number[]> {
  const seen: number[] = []
  let next: string | undefined = url
  while (next !== undefined) {
    const page: { statusCode: number, headers: Record<string, unknown>, json: () => any } =
      await app.inject({ url: next, headers })
    assert.equal(page.statusCode, 200, next)
    seen.push(...ids(page.json()))
    const link = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
    next = link === undefined ? undefined : link.slice(link.indexOf('/tasks'))
    assert.ok(seen.length <= 5)
  }
  return seen
}

for (const dialect of dialects) {
  // PostgreSQL's ts_rank reads the row alone; SQLite's bm25 and MariaDB's MATCH weigh words by the whole table.
  const ranks = seams[dialect.name].rankIsolated
  describe(`full-text search (${dialect.name})`, () => {
    test('every word of q must match, within the caller\'s rows, most relevant first', async (t) => {
      const { app, alice, bob, db } = await searchApp(t, dialect)
      const bread = await app.inject({ url: '/tasks?q=bread', headers: alice })
      assert.equal(bread.statusCode, 200)
      assert.deepEqual(ids(bread.json()).sort(), [1, 2, 5])
      const both = await app.inject({ url: '/tasks?q=RYE%20bread', headers: alice })
      assert.equal(both.statusCode, 200)
      // 5 holds rye three times, 1 once: relevance first, by default, where the rank reads the row alone; the
      // owner rule keeps the key order elsewhere (see 'under a row rule' below).
      assert.deepEqual(ids(both.json()), ranks ? [5, 1] : [1, 5])
      assert.deepEqual(both.json()[ranks ? 0 : 1], { id: 5, ...words[5], owner: 'alice', project_id: 3, project: { id: 3, name: 'z-proj', owner: 'alice' }, tags: [{ id: 1, name: 'a-tag', owner: 'alice' }] })
      if (ranks) {
        const ranked = await app.inject({ url: '/tasks?q=rye&order_by=-relevance', headers: alice })
        assert.deepEqual(ids(ranked.json()), [5, 1])
        const least = await app.inject({ url: '/tasks?q=rye&order_by=relevance', headers: alice })
        assert.deepEqual(ids(least.json()), [1, 5])
      }
      const byTitle = await app.inject({ url: '/tasks?q=bread&order_by=title', headers: alice })
      assert.deepEqual(ids(byTitle.json()), [2, 1, 5])
      const none = await app.inject({ url: '/tasks?q=bread%20knife', headers: alice })
      assert.deepEqual(none.json(), [])
      // Words shorter than three letters are left out: "a" and "of" do not narrow the match.
      const short = await app.inject({ url: '/tasks?q=a%20bread%20of', headers: alice })
      assert.deepEqual(ids(short.json()).sort(), [1, 2, 5])
      // Syntax of each engine is only words here: quotes, operators and FTS keywords match as words or not at all.
      const hostile = await app.inject({ url: `/tasks?q=${encodeURIComponent('"bread" -rye OR* NEAR(knife) +butter')}`, headers: alice })
      assert.equal(hostile.statusCode, 200)
      assert.deepEqual(hostile.json(), [])
      // bob's rows only, for bob.
      const bobs = await app.inject({ url: '/tasks?q=bread', headers: bob })
      assert.deepEqual(ids(bobs.json()), [3])
      const stored = await db.selectFrom('tasks').select(['id', 'title']).orderBy('id').execute()
      assert.deepEqual(stored.map((row) => row.title), Object.values(words).map((row) => row.title))
    })

    test('q with filters and count=true counts the same rows; two tenants never see each other\'s', async (t) => {
      const { app, alice, bob } = await searchApp(t, dialect)
      const counted = await app.inject({ url: '/tasks?q=bread&count=true&project_id=1', headers: alice })
      assert.equal(counted.statusCode, 200)
      assert.equal(counted.headers['x-total-count'], '1')
      assert.deepEqual(ids(counted.json()), [1])
      const all = await app.inject({ url: '/tasks?q=bread&count=true', headers: alice })
      assert.equal(all.headers['x-total-count'], '3')
      const estimated = await app.inject({ url: '/tasks?q=bread', headers: { ...alice, prefer: 'count=estimated' } })
      assert.equal(estimated.statusCode, 200)
      assert.equal(estimated.headers['x-total-count'], '3')
      const bobs = await app.inject({ url: '/tasks?q=rye&count=true', headers: bob })
      assert.equal(bobs.headers['x-total-count'], '1')
      assert.deepEqual(ids(bobs.json()), [3])
      // bob's words are not found for alice: "steel" is only in bob's row 4.
      const steel = await app.inject({ url: '/tasks?q=steel&count=true', headers: alice })
      assert.equal(steel.headers['x-total-count'], '0')
      assert.deepEqual(steel.json(), [])
    })

    test('cursor pages follow relevance, then the key (no row rule)', async (t) => {
      // Without a rule, relevance is an order on every database; bob's rows are gone, so alice's are all there are.
      const { app, alice } = await searchApp(t, dialect, { pagination: 'cursor', scope: undefined }, aliceOnly)
      const seen: number[] = []
      let url: string | undefined = '/tasks?q=bread&limit=1'
      while (url !== undefined) {
        const page: { statusCode: number, headers: Record<string, unknown>, json: () => any } =
          await app.inject({ url, headers: alice })
        assert.equal(page.statusCode, 200)
        seen.push(...ids(page.json()))
        const next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
        url = next === undefined ? undefined : next.slice(next.indexOf('/tasks'))
        assert.ok(seen.length <= 3)
      }
      const whole = await app.inject({ url: '/tasks?q=bread&limit=10', headers: alice })
      assert.deepEqual(seen, ids(whole.json()))
      assert.deepEqual([...seen].sort(), [1, 2, 5])
      // With search, a group, another key before relevance, and backwards through prev links.
      const query = 'q=bread&search=e&or=(project_id.1,project_id.3,project_id.2)&order_by=title,-relevance'
      const forward: number[] = []
      let last: string | undefined
      url = `/tasks?${query}&limit=1`
      while (url !== undefined) {
        const page: { statusCode: number, headers: Record<string, unknown>, json: () => any } =
          await app.inject({ url, headers: alice })
        assert.equal(page.statusCode, 200, url)
        forward.push(...ids(page.json()))
        last = url
        const next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
        url = next === undefined ? undefined : next.slice(next.indexOf('/tasks'))
      }
      assert.deepEqual(forward, [2, 1, 5])
      const back = await app.inject({ url: last ?? '', headers: alice })
      const prev = /<([^>]+)>; rel="prev"/.exec(String(back.headers.link ?? ''))?.[1] ?? ''
      const before = await app.inject({ url: prev.slice(prev.indexOf('/tasks')), headers: alice })
      assert.deepEqual(ids(before.json()), [1])
      // Least relevant first: every key ascending, one row-value comparison.
      const ascending: number[] = []
      url = '/tasks?q=rye&order_by=relevance&limit=1'
      while (url !== undefined) {
        const page: { headers: Record<string, unknown>, json: () => any } = await app.inject({ url, headers: alice })
        ascending.push(...ids(page.json()))
        const next = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
        url = next === undefined ? undefined : next.slice(next.indexOf('/tasks'))
      }
      assert.deepEqual(ascending, [1, 5])
    })

    test('under a row rule, other tenants\' words never change the answer; relevance only where the rank is the row\'s', async (t) => {
      // An auditor's requests have no rule: the same viewset, decided per request.
      const scope = (eb: any, context: { token: { sub?: string, role?: string } | null }) =>
        context.token?.role === 'auditor' ? undefined : ownerRule(eb, context)
      const options = { pagination: 'cursor', scope }
      // bob's tasks hold none of the words, or they and 20 more of his hold them many times.
      const quiet = await searchApp(t, dialect, options, async (db) => {
        await db.updateTable('tasks').set({ title: 'plain words', secret: 'nothing here' }).where('owner', '=', 'bob').execute()
      })
      const loud = await searchApp(t, dialect, options, async (db) => {
        await db.insertInto('tasks').values(Array.from({ length: 20 }, () =>
          ({ title: 'rye rye bread', secret: 'bread rye', owner: 'bob', project_id: 2 }))).execute()
      })
      for (const url of ['/tasks?q=rye%20bread&limit=1', '/tasks?q=bread&limit=2', '/tasks?q=rye&limit=10']) {
        const a = await answer(quiet.app, url, quiet.alice)
        const b = await answer(loud.app, url, loud.alice)
        assert.equal(a.status, 200, url)
        assert.deepEqual(b, a, url)
        assert.deepEqual(await walk(loud.app, url, loud.alice), await walk(quiet.app, url, quiet.alice), url)
      }
      // The default order while q is present: relevance where the rank is the row's, else the key.
      assert.deepEqual(await walk(loud.app, '/tasks?q=rye&limit=1', loud.alice), ranks ? [5, 1] : [1, 5])
      // Each holds bread once: ts_rank ties them, and ties go by key.
      assert.deepEqual(await walk(loud.app, '/tasks?q=bread&limit=1', loud.alice), [1, 2, 5])
      for (const order of ['-relevance', 'relevance', 'title,-relevance']) {
        const url = `/tasks?q=rye&order_by=${order}&limit=1`
        if (ranks) {
          const a = await answer(quiet.app, url, quiet.alice)
          assert.equal(a.status, 200, url)
          assert.deepEqual(await answer(loud.app, url, loud.alice), a, url)
          assert.deepEqual(await walk(loud.app, url, loud.alice), order === 'relevance' ? [1, 5] : order === '-relevance' ? [5, 1] : [1, 5])
          continue
        }
        const refused = await loud.app.inject({ url, headers: loud.alice })
        assert.equal(refused.statusCode, 400, url)
        const problem = problemOf(refused)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
        assert.equal(problem.errors?.[0]?.field, 'order_by')
        assert.match(problem.errors?.[0]?.message ?? '', /relevance while a row rule limits the rows: .*every row of the table/)
        assert.doesNotMatch(refused.body, /bm25|match|select/i)
      }
      // Without a rule for the request (the auditor), relevance is an order on every database.
      const auditor = { authorization: `Bearer ${quiet.app.jwt.sign({ sub: 'carol', role: 'auditor' })}` }
      const audited = await quiet.app.inject({ url: '/tasks?q=rye&order_by=-relevance', headers: auditor })
      assert.equal(audited.statusCode, 200)
      assert.deepEqual(ids(audited.json()), [5, 1])
      assert.deepEqual(await walk(quiet.app, '/tasks?q=rye&limit=1', auditor), [5, 1])
      // bob, under the rule, reads his own rows only, in key order where the rank reads the whole table.
      const bobs = await loud.app.inject({ url: '/tasks?q=rye&limit=3', headers: loud.bob })
      assert.equal(bobs.statusCode, 200)
      assert.ok(ids(bobs.json()).every((id) => id === 3 || id > 5))
      if (!ranks) assert.deepEqual(ids(bobs.json()), [3, 6, 7])
      // Nothing was written: the loud database holds its 25 tasks, the quiet one bob's plain words.
      assert.equal((await loud.db.selectFrom('tasks').select('id').execute()).length, 25)
      const plain = await quiet.db.selectFrom('tasks').select('title').where('owner', '=', 'bob').execute()
      assert.deepEqual(plain.map((row) => row.title), ['plain words', 'plain words'])
    })

    test('bad q and relevance without q are 400s that change nothing', async (t) => {
      const { app, alice, db } = await searchApp(t, dialect, { maxSearchLength: 80 })
      const cases: Array<[string, string, RegExp]> = [
        ['/tasks?q=a%20b', 'q', /at least 3 letters/],
        [`/tasks?q=${'x'.repeat(81)}`, 'q', /more than 80 characters/],
        [`/tasks?q=${Array.from({ length: 17 }, () => 'abc').join('%20')}`, 'q', /more than 16 words/],
        ['/tasks?q=bread%00', 'q', /pattern|NUL/],
        ['/tasks?order_by=-relevance', 'order_by', /relevance only while q is present/],
      ]
      for (const [url, field, message] of cases) {
        const response = await app.inject({ url, headers: alice })
        assert.equal(response.statusCode, 400, url)
        const problem = problemOf(response)
        assert.equal(problem.code, 'FST_VIEWSET_VALIDATION')
        assert.equal(problem.errors?.[0]?.field, field, url)
        assert.match(problem.errors?.[0]?.message ?? '', message, url)
      }
      assert.equal((await db.selectFrom('tasks').select('id').execute()).length, 5)
    })

    test('a caller who may not read every fullText field cannot send q (no oracle for the hidden field)', async (t) => {
      const { app, support, alice } = await searchApp(t, dialect)
      const hidden = await app.inject({ url: '/tasks?q=flour', headers: support })
      assert.equal(hidden.statusCode, 400)
      assert.equal(problemOf(hidden).errors?.[0]?.field, 'q')
      // The same 400 as a parameter that does not exist.
      const unknown = await app.inject({ url: '/tasks?nope=flour', headers: support })
      assert.equal(hidden.body.replaceAll('q', 'nope'), unknown.body.replaceAll('q', 'nope'))
      const ordered = await app.inject({ url: '/tasks?order_by=-relevance', headers: support })
      assert.equal(ordered.statusCode, 400)
      const seen = await app.inject({ url: '/tasks?q=flour', headers: alice })
      assert.deepEqual(ids(seen.json()), [1])
    })

    test('writes keep the index in sync: POST, PATCH and DELETE', async (t) => {
      const { app, alice, db } = await searchApp(t, dialect)
      const created = await app.inject({
        method: 'POST', url: '/tasks', headers: alice, payload: { title: 'pumpernickel crust', project_id: 1 },
      })
      assert.equal(created.statusCode, 201)
      const id: number = created.json().id
      const found = await app.inject({ url: '/tasks?q=pumpernickel', headers: alice })
      assert.deepEqual(ids(found.json()), [id])
      const patched = await app.inject({
        method: 'PATCH', url: `/tasks/${id}`, headers: alice, payload: { title: 'baguette crust' },
      })
      assert.equal(patched.statusCode, 200)
      assert.deepEqual(ids((await app.inject({ url: '/tasks?q=pumpernickel', headers: alice })).json()), [])
      assert.deepEqual(ids((await app.inject({ url: '/tasks?q=baguette', headers: alice })).json()), [id])
      assert.deepEqual(ids((await app.inject({ url: '/tasks?q=crust', headers: alice })).json()), [id])
      const deleted = await app.inject({ method: 'DELETE', url: `/tasks/${id}`, headers: alice })
      assert.equal(deleted.statusCode, 204)
      assert.deepEqual(ids((await app.inject({ url: '/tasks?q=crust', headers: alice })).json()), [])
      assert.equal((await db.selectFrom('tasks').select('id').where('id', '=', id).execute()).length, 0)
    })

    test('startup fails naming the missing index, with its migration', async (t) => {
      await assert.rejects(
        tenantsApp(t, dialect, { tasks: { fullText: { fields: ['title', 'secret'] } } }),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, 'FST_VIEWSET_INVALID_OPTION')
          assert.match(error.message, /fullText/)
          assert.match(error.message, { sqlite: /no FTS5 table "tasks_fts"/, postgres: /no GIN index on to_tsvector\('simple'/, mysql: /no FULLTEXT index over exactly \(title, secret\)/ }[dialect.name])
          assert.ok(error.message.includes(seams[dialect.name].migration(index)))
          return true
        }
      )
      await assert.rejects(
        tenantsApp(t, dialect, { tasks: { fullText: { fields: ['title', 'owner_id'] } } }),
        /fullText.*"owner_id" is not a string column/
      )
      await assert.rejects(
        tenantsApp(t, dialect, { tasks: { fullText: { fields: ['title'], lang: 'english' } } }),
        /fullText.*unknown key "lang"/
      )
    })

    test('language applies on PostgreSQL only; SQLite reads the FTS5 table fullText.table names', async (t) => {
      const english = { ...index, language: 'english', ftsTable: 'task_search' }
      const { app, alice } = await tenantsApp(t, dialect, {
        prepare: async (db) => {
          await reword(db)
          for (const statement of seams[dialect.name].migration(english).split('\n')) {
            await sql.raw(statement).execute(db)
          }
        },
        tasks: { fullText: { fields: ['title', 'secret'], language: 'english', table: 'task_search' } },
      })
      // English stems "breads" to "bread" on PostgreSQL; elsewhere a word matches as written.
      const stemmed = await app.inject({ url: '/tasks?q=breads', headers: alice })
      assert.equal(stemmed.statusCode, 200)
      assert.deepEqual(ids(stemmed.json()).sort(), dialect.name === 'postgres' ? [1, 2, 5] : [])
      const plain = await app.inject({ url: '/tasks?q=bread', headers: alice })
      assert.deepEqual(ids(plain.json()).sort(), [1, 2, 5])
      if (dialect.name !== 'postgres') return
      // An index on another configuration serves no statement of this one: startup says so.
      await assert.rejects(tenantsApp(t, dialect, {
        prepare: async (db) => {
          for (const statement of postgresFullText.migration(english).split('\n')) await sql.raw(statement).execute(db)
        },
        tasks: { fullText: { fields: ['title', 'secret'] } },
      }), /fullText.*no GIN index on to_tsvector\('simple'/s)
    })

    test('OpenAPI documents q and relevance', async (t) => {
      const database = await testDatabase(t, dialect)
      await seedTenants(database, dialect)
      const db = database.db as Kysely<TenantsDB>
      await createIndex(db, dialect)
      const app = testApp(t)
      await app.register(fastifyJwt, { secret })
      await app.register(viewsetDocs)
      await app.register(createViewset({ db, ...owned('tasks', Type.Omit(TaskRow, ['tags'])), fullText: { fields: ['title', 'secret'] } } as never),
        { prefix: '/tasks' })
      const document = (await app.inject('/docs/json')).json()
      const parameters: Array<{ name: string, description?: string, schema: Record<string, unknown> }> = document.paths['/tasks'].get.parameters
      const q = parameters.find((parameter) => parameter.name === 'q')
      assert.equal(q?.schema.type, 'string')
      assert.match(String(q?.description ?? q?.schema.description), /every word must match/)
      const orderBy = parameters.find((parameter) => parameter.name === 'order_by')
      assert.ok(new RegExp(String(orderBy?.schema.pattern), 'u').test('-relevance'))
      // Where the rank reads the whole table, both say that a row rule keeps q in the default order.
      const ruled = /Under a row rule \(`scope`\) `relevance` is not allowed and q keeps the default order/
      for (const parameter of [q, orderBy]) {
        const description = String(parameter?.description ?? parameter?.schema.description)
        if (ranks) assert.doesNotMatch(description, ruled)
        else assert.match(description, ruled)
      }
    })
  })
}

test('cost class: q and its relevance order are served by the index, not classed heavy by their shape', () => {
  const db = compileOnlySqlite<Record<string, Row>>()
  for (const seam of Object.values(seams)) {
    const text = seam.text(['bread', 'rye'])
    const select = db.selectFrom('tasks').selectAll().where(seam.matches(index, text))
    assert.equal(costOf(select.orderBy('id').limit(10).compile().query), 'cheap')
    assert.equal(costOf(select.orderBy(seam.relevance(index, text), 'desc').orderBy('id').limit(10).compile().query), 'cheap')
  }
  // A substring search, for comparison, reads every row.
  assert.equal(costOf(db.selectFrom('tasks').selectAll().where('title', 'like', '%bread%').compile().query), 'heavy')
})
