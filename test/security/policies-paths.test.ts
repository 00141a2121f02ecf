import assert from 'node:assert/strict'
import { Buffer } from 'node:buffer'
import { describe, test } from 'node:test'
import { createViewset } from 'fastify-viewsets'
import { dialects } from '../helpers/database.js'
import { owned, Task, taskRelations, tenantsApp } from '../helpers/tenants.js'
import type { TenantsOptions } from '../helpers/tenants.js'

// Relation filters, search, ordering, cursors and counts apply the related table's 'LIST' rule (issue 35, item 1):
// their subqueries see only the rows the rule admits, so a path never tells a tenant of another tenant's rows.

const paths: TenantsOptions = {
  tasks: {
    filterFields: { title: ['eq'], 'project.owner': ['eq'], 'project.name': ['eq', 'contains'], 'tags.name': ['eq'] },
    searchFields: ['title', 'project.name'],
    orderingFields: ['id', 'project.name'],
  },
  projects: { filterFields: { 'tasks.title': ['eq'], 'tasks.tags.name': ['eq'] } },
}

/** /tasks by cursor too, with the same rule (the one function), so relations still find one rule per table. */
const withCursor: TenantsOptions = {
  ...paths,
  extra: async (app, db) => {
    await app.register(createViewset({
      db, ...owned('tasks', Task), relatedConfig: taskRelations, ...paths.tasks, pagination: 'cursor',
    } as never), { prefix: '/task-pages' })
  },
}

/** The ids of a LIST answer. */
function ids (response: { json: () => unknown }): number[] {
  const rows = response.json()
  assert.ok(Array.isArray(rows))
  return rows.map((row: { id: number }) => row.id)
}

/** The URLs of a Link header, by rel. */
function links (header: unknown): Record<string, string> {
  const found: Record<string, string> = {}
  for (const part of typeof header === 'string' ? header.split(', ') : []) {
    const match = /^<([^>]*)>; rel="(next|prev)"$/.exec(part)
    if (match?.[1] !== undefined && match[2] !== undefined) found[match[2]] = match[1]
  }
  return found
}

for (const dialect of dialects) {
  describe(`relation paths under the related table's rule (${dialect.name})`, () => {
    test("a filter through a to-one finds nothing of another tenant's rows: ?project.owner=bob", async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect, paths)
      const spied = await app.inject({ url: '/tasks?project.owner=bob&fields=id,project', headers: alice })
      assert.equal(spied.statusCode, 200)
      assert.deepEqual(spied.json(), [])
      const named = await app.inject({ url: '/tasks?project.name__contains=b-pr&count=true', headers: alice })
      assert.deepEqual(ids(named), [])
      assert.equal(named.headers['x-total-count'], '0')
      // The same statements serve each tenant with its own values: bob finds his task in his project, alice hers.
      for (let round = 0; round < 2; round++) {
        assert.deepEqual(ids(await app.inject({ url: '/tasks?project.owner=bob', headers: bob })), [3])
        assert.deepEqual(ids(await app.inject({ url: '/tasks?project.owner=alice', headers: alice })), [1, 5])
        assert.deepEqual(ids(await app.inject({ url: '/tasks?project.owner=bob', headers: alice })), [])
      }
    })

    test('a filter through a many-to-many, and two levels deep, sees only admitted rows', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect, paths)
      // every task carries bob's tag, which alice cannot read
      assert.deepEqual(ids(await app.inject({ url: '/tasks?tags.name=b-tag', headers: alice })), [])
      assert.deepEqual(ids(await app.inject({ url: '/tasks?tags.name=a-tag', headers: alice })), [1, 2, 5])
      assert.deepEqual(ids(await app.inject({ url: '/tasks?tags.name=b-tag', headers: bob })), [3, 4])
      // projects → tasks → tags: bob's task 4 in alice's project 1, bob's tag on alice's tasks
      assert.deepEqual(ids(await app.inject({ url: '/projects?tasks.title=b-task-4', headers: alice })), [])
      assert.deepEqual(ids(await app.inject({ url: '/projects?tasks.tags.name=b-tag', headers: alice })), [])
      assert.deepEqual(ids(await app.inject({ url: '/projects?tasks.tags.name=a-tag', headers: alice })), [1, 3])
      assert.deepEqual(ids(await app.inject({ url: '/projects?tasks.tags.name=b-tag', headers: bob })), [2])
    })

    test('search through a relation matches no hidden row', async (t) => {
      const { app, alice, bob } = await tenantsApp(t, dialect, paths)
      const found = await app.inject({ url: '/tasks?search=b-proj&count=true', headers: alice })
      assert.deepEqual(ids(found), [])
      assert.equal(found.headers['x-total-count'], '0')
      assert.deepEqual(ids(await app.inject({ url: '/tasks?search=b-proj', headers: bob })), [3])
      assert.deepEqual(ids(await app.inject({ url: '/tasks?search=a-task-2', headers: alice })), [2])
    })

    test('ordering through a relation sorts a hidden row as null, in the same statements', async (t) => {
      const { app, alice, bob, queries } = await tenantsApp(t, dialect, paths)
      queries.length = 0
      const ordered = await app.inject({ url: '/tasks?order_by=project.name&count=true', headers: alice })
      assert.equal(ordered.statusCode, 200)
      // a-proj, z-proj, then task 2 whose project (bob's) is null for alice: nulls sort last ascending
      assert.deepEqual(ids(ordered), [1, 5, 2])
      assert.equal(ordered.headers['x-total-count'], '3')
      assert.ok(!ordered.body.includes('b-proj'))
      // the page, its count, the projects, the tags
      assert.equal(queries.length, 4)
      assert.deepEqual(ids(await app.inject({ url: '/tasks?order_by=-project.name', headers: alice })), [2, 5, 1])
      assert.deepEqual(ids(await app.inject({ url: '/tasks?order_by=project.name', headers: bob })), [3, 4])
      assert.deepEqual(ids(await app.inject({ url: '/tasks?order_by=project.name', headers: alice })), [1, 5, 2])
    })

    test('cursors through a ruled ordering walk the admitted order and carry no hidden value', async (t) => {
      const { app, alice } = await tenantsApp(t, dialect, withCursor)
      for (const order of ['project.name', '-project.name']) {
        const seen: number[] = []
        let url: string | undefined = `/task-pages?order_by=${order}&limit=1`
        while (url !== undefined) {
          const page: { statusCode: number, body: string, headers: Record<string, unknown>, json: () => unknown } =
            await app.inject({ url, headers: alice })
          assert.equal(page.statusCode, 200, page.body)
          seen.push(...ids(page))
          for (const link of Object.values(links(page.headers.link))) {
            const cursor = new URL(link, 'http://x').searchParams.get('cursor') ?? ''
            assert.ok(!Buffer.from(cursor, 'base64url').toString().includes('b-proj'), 'no hidden name in a cursor')
          }
          url = links(page.headers.link).next
          assert.ok(seen.length < 10)
        }
        assert.deepEqual(seen, order === 'project.name' ? [1, 5, 2] : [2, 5, 1])
        // and back: prev from the last page
        const last = await app.inject({ url: `/task-pages?order_by=${order}&limit=2`, headers: alice })
        const next = links(last.headers.link).next
        assert.ok(next !== undefined)
        const second = await app.inject({ url: next, headers: alice })
        assert.deepEqual(ids(second), order === 'project.name' ? [2] : [1])
        const prev = links(second.headers.link).prev
        assert.ok(prev !== undefined)
        assert.deepEqual(ids(await app.inject({ url: prev, headers: alice })), order === 'project.name' ? [1, 5] : [2, 5])
      }
    })
  })
}
