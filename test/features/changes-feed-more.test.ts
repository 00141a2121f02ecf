import { strict as assert } from 'node:assert'
import { describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase, fieldAccessByRole, Viewset } from '../../lib/index.js'
import { openStreams } from '../../lib/changes/stream-limits.js'
import { sqliteFullText } from '../../lib/dialect/sqlite/sqlite-full-text.js'
import { postgresFullText } from '../../lib/dialect/postgres/postgres-full-text.js'
import { mysqlFullText } from '../../lib/dialect/mysql/mysql-full-text.js'
import { dialects } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import { openSse } from '../helpers/sse.js'
import type { SseEvent, SseStream } from '../helpers/sse.js'
import { tenantsApp } from '../helpers/tenants.js'
import type { TenantsApp, TenantsDB, TenantsOptions } from '../helpers/tenants.js'

// Issue 40, the feed's events as LIST serves its rows: the relation fields the request names, under the related
// tables' row and field rules of each stream's caller (two tenants, alice and bob: test/helpers/tenants.ts), loaded
// once per batch and group, not per stream; `q` on the feed (evaluated on the stored versions where the database
// can, else a 400); and a `list` override, which the feed would bypass, refused unless confirmed.

/** The ids the next tasks get (five are seeded): each is linked to both tenants' tags before it exists. */
const nextTasks = [6, 7, 8, 9, 10, 11, 12]

interface FeedTenants extends TenantsApp {
  base: string
  bearer: (sub: string, claims?: object) => Record<string, string>
}

/** The tenants' app with `changes` on tasks, listening on a real socket; auditors may not read a project's name. */
async function feedTenants (t: TestContext, dialect: TestDialect, options: TenantsOptions = {}): Promise<FeedTenants> {
  const tenants = await tenantsApp(t, dialect, {
    ...options,
    prepare: async (db) => {
      await db.insertInto('task_tags').values(nextTasks.flatMap((task) => [
        { task_id: task, tag_id: 1 }, { task_id: task, tag_id: 2 },
      ])).execute()
      await options.prepare?.(db)
    },
    tasks: { history: { createTable: true }, changes: { pollInterval: 25 }, ...options.tasks },
    projects: {
      fieldAccess: fieldAccessByRole({ auditor: { hidden: ['name'] } }, (token) => String(token?.role ?? ''), {}),
      ...options.projects,
    },
  })
  await tenants.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = tenants.app.server.address() as AddressInfo
  const bearer = (sub: string, claims: object = {}) =>
    ({ authorization: `Bearer ${tenants.app.jwt.sign({ sub, ...claims })}` })
  return { ...tenants, base: `http://127.0.0.1:${port}`, bearer }
}

async function subscribe (t: TestContext, url: string, headers: Record<string, string>): Promise<SseStream> {
  const stream = await openSse(url, headers)
  t.after(() => { stream.close() })
  assert.equal(stream.status, 200, stream.body)
  return stream
}

async function post (feed: FeedTenants, sub: string, payload: object): Promise<{ id: number }> {
  const response = await feed.app.inject({ method: 'POST', url: '/tasks', headers: feed.bearer(sub), payload })
  assert.equal(response.statusCode, 201, response.body)
  return response.json()
}

/** The next event's name and data. */
async function next (stream: SseStream): Promise<[string, any]> {
  const event: SseEvent = await stream.next()
  return [event.event, JSON.parse(event.data)]
}

async function patch (feed: FeedTenants, sub: string, id: number, payload: object): Promise<void> {
  const response = await feed.app.inject({ method: 'PATCH', url: `/tasks/${id}`, headers: feed.bearer(sub), payload })
  assert.equal(response.statusCode, 200, response.body)
}

/** The row LIST answers this caller for this task. */
async function listed (feed: FeedTenants, headers: Record<string, string>, id: number): Promise<unknown> {
  const response = await feed.app.inject({ url: '/tasks?limit=100', headers })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().find((row: { id: number }) => row.id === id)
}

const aProject = { id: 1, name: 'a-proj', owner: 'alice' }
const aTag = { id: 1, name: 'a-tag', owner: 'alice' }
const bTag = { id: 2, name: 'b-tag', owner: 'bob' }

for (const dialect of dialects) {
  describe(`change feed: events as LIST serves them (${dialect.name})`, () => {
    test('events carry the relations the request names, under each caller\'s rules of their tables', async (t) => {
      const feed = await feedTenants(t, dialect)
      const alice = await subscribe(t, `${feed.base}/tasks`, feed.bearer('alice'))
      const auditor = await subscribe(t, `${feed.base}/tasks`, feed.bearer('alice', { role: 'auditor' }))
      const projectOnly = await subscribe(t, `${feed.base}/tasks?fields=id,title,project`, feed.bearer('alice'))
      const bare = await subscribe(t, `${feed.base}/tasks?fields=id,title`, feed.bearer('alice'))
      const bob = await subscribe(t, `${feed.base}/tasks`, feed.bearer('bob'))
      const created = await post(feed, 'alice', { title: 'a-6', project_id: 1 })
      assert.ok(nextTasks.includes(created.id))
      // Task 2 (alice's) is planted in bob's project, task 4 (bob's) in alice's: a to-one outside the rule is null,
      // and of the to-many tags each sees only their own.
      await patch(feed, 'alice', 2, { title: 'a-task-2b' })
      await patch(feed, 'bob', 4, { title: 'b-task-4b' })
      await patch(feed, 'alice', created.id, { project_id: 3 })
      const inserted = await next(alice)
      assert.deepEqual(inserted, ['insert', {
        id: created.id, title: 'a-6', secret: '', owner: 'alice', project_id: 1, project: aProject, tags: [aTag],
      }])
      const planted = await next(alice)
      assert.deepEqual(planted, ['update', {
        id: 2, title: 'a-task-2b', secret: 'alice-secret-2', owner: 'alice', project_id: 2, project: null, tags: [aTag],
      }])
      // The events are the rows as alice's LIST serializes them; bob's write, between these, never arrives.
      assert.deepEqual(planted[1], await listed(feed, feed.bearer('alice'), 2))
      const moved = await next(alice)
      const zProject = { id: 3, name: 'z-proj', owner: 'alice' }
      assert.deepEqual(moved, ['update', {
        id: created.id, title: 'a-6', secret: '', owner: 'alice', project_id: 3, project: zProject, tags: [aTag],
      }])
      assert.deepEqual(moved[1], await listed(feed, feed.bearer('alice'), created.id))
      const audited = await next(auditor)
      // The projects' field rule hides the name from alice's auditor token: another group, other loads.
      assert.deepEqual(audited[1].project, { id: 1, owner: 'alice' })
      assert.deepEqual((await next(auditor))[1].project, null)
      const movedForAuditor = await next(auditor)
      assert.deepEqual(movedForAuditor[1], await listed(feed, feed.bearer('alice', { role: 'auditor' }), created.id))
      assert.deepEqual(await next(projectOnly), ['insert', { id: created.id, title: 'a-6', project: aProject }])
      assert.deepEqual(await next(bare), ['insert', { id: created.id, title: 'a-6' }])
      // bob's stream: his own write only, his rules of the related tables.
      assert.deepEqual(await next(bob), ['update', {
        id: 4, title: 'b-task-4b', secret: 'bob-secret-4', owner: 'bob', project_id: 1, project: null, tags: [bTag],
      }])
      // alice's writes before and after never reached it: its next event is its next write.
      await patch(feed, 'bob', 4, { title: 'b-task-4c' })
      assert.deepEqual(await next(bob).then(([event, data]) => [event, data.title]), ['update', 'b-task-4c'])
      const stored = await feed.db.selectFrom('tasks').select(['id', 'title', 'owner', 'project_id'])
        .where('id', 'in', [2, 4, created.id]).orderBy('id').execute()
      assert.deepEqual(stored.map((row: any) => [Number(row.id), row.title, row.owner, Number(row.project_id)]),
        [[2, 'a-task-2b', 'alice', 2], [4, 'b-task-4c', 'bob', 1], [created.id, 'a-6', 'alice', 3]])
    })

    test('relations are loaded once per batch and group of streams, not per stream', async (t) => {
      const feed = await feedTenants(t, dialect)
      const related = () => feed.queries.filter((text) => /[`"]projects[`"]|[`"]tags[`"]/.test(text)).length
      /** The statements reading projects or tags while one write reaches every stream given. */
      const cost = async (streams: SseStream[], title: string) => {
        feed.queries.length = 0
        await post(feed, 'alice', { title, project_id: 1 })
        for (const stream of streams) assert.equal((await next(stream))[1].title, title)
        return related()
      }
      const one = await subscribe(t, `${feed.base}/tasks`, feed.bearer('alice'))
      const alone = await cost([one], 'a-6')
      const two = await subscribe(t, `${feed.base}/tasks`, feed.bearer('alice'))
      const three = await subscribe(t, `${feed.base}/tasks?fields=id,title,project,tags`, feed.bearer('alice'))
      assert.equal(await cost([one, two, three], 'a-7'), alone, 'three streams of one group: the same loads as one')
      // A caller whose rules of the related tables differ (the auditor's field rule) is another group: its own loads.
      const auditor = await subscribe(t, `${feed.base}/tasks`, feed.bearer('alice', { role: 'auditor' }))
      assert.ok(await cost([one, two, three, auditor], 'a-8') > alone)
    })

    test('q on the feed: exactly the matching changes, or a 400 where the index cannot judge a stored version',
      async (t) => {
        const seams = { sqlite: sqliteFullText, postgres: postgresFullText, mysql: mysqlFullText }
        const index = { table: 'tasks', key: 'id', fields: ['title'], language: 'simple', ftsTable: 'tasks_fts' }
        const feed = await feedTenants(t, dialect, {
          prepare: async (db: Kysely<TenantsDB>) => {
            for (const statement of seams[dialect.name].migration(index).split('\n')) {
              await sql.raw(statement).execute(db)
            }
          },
          tasks: { fullText: { fields: ['title'] } },
        })
        if (dialect.name !== 'postgres') {
          const before = openStreams()
          const refused = await feed.app.inject({
            url: '/tasks?q=apple', headers: { ...feed.bearer('alice'), accept: 'text/event-stream' },
          })
          assert.equal(refused.statusCode, 400)
          assert.equal(refused.json().code, 'FST_VIEWSET_VALIDATION')
          assert.match(refused.json().detail, /q cannot be combined with Accept: text\/event-stream on this database/)
          assert.equal(openStreams(), before)
          // LIST's q is unchanged.
          await post(feed, 'alice', { title: 'green apple', project_id: 1 })
          const page = await feed.app.inject({ url: '/tasks?q=apple', headers: feed.bearer('alice') })
          assert.deepEqual(page.json().map((row: { title: string }) => row.title), ['green apple'])
          return
        }
        const stream = await subscribe(t, `${feed.base}/tasks?q=apple&fields=id,title`, feed.bearer('alice'))
        const apple = await post(feed, 'alice', { title: 'green apple', project_id: 1 })
        await post(feed, 'alice', { title: 'banana', project_id: 1 })
        await post(feed, 'bob', { title: 'apple pie', project_id: 2 })
        const patched = await feed.app.inject({
          method: 'PATCH', url: `/tasks/${apple.id}`, headers: feed.bearer('alice'), payload: { title: 'pear' },
        })
        assert.equal(patched.statusCode, 200)
        const tart = await post(feed, 'alice', { title: 'apple tart', project_id: 1 })
        assert.deepEqual(await next(stream), ['insert', { id: apple.id, title: 'green apple' }])
        // The row left q's words: a delete, judged on its stored versions.
        assert.deepEqual(await next(stream), ['delete', { key: { id: apple.id } }])
        assert.deepEqual(await next(stream), ['insert', { id: tart.id, title: 'apple tart' }])
        const page = await feed.app.inject({ url: '/tasks?q=apple', headers: feed.bearer('alice') })
        assert.deepEqual(page.json().map((row: { id: number }) => row.id), [tart.id])
        const titles = await feed.db.selectFrom('tasks').select('title').where('id', '>', 5).orderBy('id').execute()
        assert.deepEqual(titles.map((row: any) => row.title), ['pear', 'banana', 'apple pie', 'apple tart'])
      })
  })
}

test('a list override with changes fails at construction, unless ignoreListOverride confirms it', () => {
  const db = createDatabase<any>('sqlite::memory:')
  const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
  class Restricted extends Viewset<any, 'items', typeof Item> {
    // A restriction written only here: the feed and changed_since would not apply it.
    override async list () { return await this.query().where('name', '!=', 'hidden').execute() }
  }
  const options = { db, table: 'items', schema: Item, history: true } as const
  assert.throws(() => new Restricted({ ...options, changes: true } as any), (error: Error) => {
    assert.equal(error.message, 'Invalid viewset option changes: the feed and changed_since read rows through the ' +
      'rule (scope), not through your list override: move any restriction of the override into scope, or set ' +
      'changes: { ignoreListOverride: true } to confirm')
    return true
  })
  assert.doesNotThrow(() => new Restricted({ ...options, changes: { ignoreListOverride: true } } as any))
  assert.throws(() => new Restricted({ ...options, changes: { ignoreListOverride: 'yes' } } as any),
    /changes\.ignoreListOverride: expected true or false/)
  // Without changes, or without an override, nothing to confirm.
  assert.doesNotThrow(() => new Restricted({ ...options } as any))
  assert.doesNotThrow(() => new Viewset({ ...options, changes: true } as any))
})
