import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { dialects } from '../helpers/database.js'
import { tenantsApp } from '../helpers/tenants.js'

// A field rule is asked on every request, and what it answers is remembered only by content (query/field-access.ts):
// an answer changed in place changes what is hidden at once. A LIST query string under field rules is validated once
// when every parameter it names is checked alike by the route (http/narrowed-input.ts): those parameters still get
// the route's 400, hidden names still get theirs, whoever asks.

for (const dialect of dialects) {
  describe(`fieldAccess answers (${dialect.name})`, () => {
    test('a list the rule changes in place hides what it names now, for each tenant', async (t) => {
      const hidden = ['secret']
      const { app, alice, bob } = await tenantsApp(t, dialect, { tasks: { fieldAccess: () => ({ hidden }) } })
      const read = async (url: string, headers: Record<string, string>) => {
        const response = await app.inject({ url, headers })
        assert.equal(response.statusCode, 200, response.body)
        return response.json<Record<string, unknown>>()
      }
      const first = await read('/tasks/1', alice)
      assert.equal('secret' in first, false)
      assert.equal(first.title, 'a-task-1')
      hidden[0] = 'title'
      const second = await read('/tasks/1', alice)
      assert.equal('title' in second, false)
      assert.equal(second.secret, 'alice-secret-1')
      hidden.push('secret')
      const bobs = await read('/tasks/3', bob)
      assert.equal('title' in bobs, false)
      assert.equal('secret' in bobs, false)
      // the row rule still holds: alice's task is no task of bob's
      assert.equal((await app.inject({ url: '/tasks/1', headers: bob })).statusCode, 404)
      hidden.length = 0
      assert.equal((await read('/tasks/1', alice)).secret, 'alice-secret-1')
    })

    test('under field rules, the parameters the route checks still answer its 400; hidden names theirs', async (t) => {
      const { app, alice } = await tenantsApp(t, dialect, {
        tasks: { fieldAccess: () => ({ hidden: ['secret'] }), orderingFields: ['id', 'title', 'secret'] },
      })
      const plain = await tenantsApp(t, dialect, { tasks: { orderingFields: ['id', 'title'] } })
      for (const url of ['/tasks?limit=0', '/tasks?limit=abc', '/tasks?offset=-1', '/tasks?limit=2&order_by=secret']) {
        const ruled = await app.inject({ url, headers: alice })
        assert.equal(ruled.statusCode, 400, url)
        // the same 400 as a viewset whose schema never served the field
        assert.equal(ruled.body, (await plain.app.inject({ url, headers: plain.alice })).body, url)
      }
      const listed = await app.inject({ url: '/tasks?limit=2&offset=1', headers: alice })
      assert.equal(listed.statusCode, 200)
      const rows = listed.json<Array<Record<string, unknown>>>()
      assert.deepEqual(rows.map((row) => row.id), [2, 5])
      for (const row of rows) assert.equal('secret' in row, false)
    })

    test('under field rules, `order_by` and `fields` checked alone answer as the whole narrowed schema did', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect, {
        tasks: {
          fieldAccess: () => ({ hidden: ['secret'] }),
          orderingFields: ['id', 'title', 'secret'],
          filterFields: { title: ['eq'], secret: ['eq'] },
        },
      })
      const plain = await tenantsApp(t, dialect, { tasks: { orderingFields: ['id', 'title'] } })
      // Names whose narrowed schema differs from the route's (`order_by`, `fields`), beside ones the route checks.
      const refused = [
        '/tasks?order_by=', '/tasks?order_by=-secret&limit=2', '/tasks?limit=abc&order_by=-title', '/tasks?order_by=-title&offset=-1', '/tasks?order_by=-title&sekret=1',
        '/tasks?fields=&order_by=title',
      ]
      for (const url of refused) {
        const ruled = await app.inject({ url, headers: alice })
        assert.equal(ruled.statusCode, 400, url)
        assert.equal(ruled.body, (await plain.app.inject({ url, headers: plain.alice })).body, url)
      }
      // A hidden field in `fields` is an unknown one (the plain viewset serves `secret`: compared with a misspelling).
      const queries = [
        'fields=id,secret&order_by=-title', 'secret=x&order_by=-title', 'order_by=-title&secret=x',
        'or=(title.x,secret.y)&order_by=-title', 'order_by=-title&or=(secret.y)',
      ]
      for (const query of queries) {
        const hidden = await app.inject({ url: `/tasks?${query}`, headers: bob })
        const unknown = await app.inject({ url: `/tasks?${query.replaceAll('secret', 'sekret')}`, headers: bob })
        assert.equal(hidden.statusCode, 400, query)
        assert.equal(hidden.body.replaceAll('secret', 'sekret'), unknown.body, query)
      }
      const page = async (url: string, headers: Record<string, string>) => {
        const response = await app.inject({ url, headers })
        assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
        return response.json<Array<Record<string, unknown>>>()
      }
      const ordered = await page('/tasks?order_by=-title&limit=2', alice)
      assert.deepEqual(ordered.map((row) => row.title), ['a-task-5', 'a-task-2'])
      for (const row of ordered) assert.equal('secret' in row, false)
      assert.deepEqual(await page('/tasks?fields=id,title&order_by=-id', bob), [
        { id: 4, title: 'b-task-4' }, { id: 3, title: 'b-task-3' },
      ])
    })

    test('under field rules, a PATCH naming only writable fields gets the route\'s 400; a hidden one its own', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect, { tasks: { fieldAccess: () => ({ hidden: ['secret'] }) } })
      const plain = await tenantsApp(t, dialect, {})
      const patch = async (target: typeof app, headers: Record<string, string>, payload: object) =>
        await target.inject({ method: 'PATCH', url: '/tasks/1', headers, payload })
      for (const payload of [{ title: 5 }, { title: 'x', project_id: 'none' }, {}]) {
        const ruled = await patch(app, alice, payload)
        const unruled = await patch(plain.app, plain.alice, payload)
        assert.equal(ruled.statusCode, unruled.statusCode, JSON.stringify(payload))
        if (ruled.statusCode === 400) assert.equal(ruled.body, unruled.body, JSON.stringify(payload))
      }
      const hidden = await patch(app, alice, { secret: 'leaked' })
      const unknown = await patch(app, alice, { sekret: 'leaked' })
      assert.equal(hidden.statusCode, 400)
      assert.equal(hidden.body.replaceAll('secret', 'sekret'), unknown.body)
      const renamed = await patch(app, alice, { title: 'renamed' })
      assert.equal(renamed.statusCode, 200)
      assert.equal(renamed.json().title, 'renamed')
      assert.equal('secret' in renamed.json(), false)
      assert.equal((await patch(app, bob, { title: 'stolen' })).statusCode, 404, "bob's rule has no task 1")
      const stored = await app.inject({ url: '/tasks/1', headers: alice })
      assert.equal(stored.json().title, 'renamed')
    })
  })
}
