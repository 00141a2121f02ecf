// The promise hooks that carry a request's scope through user code are installed only when a viewset over a
// database that cancels (PostgreSQL, createDatabase) runs user code in its requests: each case in a process
// of its own, since the hooks stay on once installed.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { createDatabase } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { createItemsTable } from '../helpers/items.js'

const run = promisify(execFile)

const expected = {
  'generated routes only': false,
  'a scope option': false,
  'a fieldAccess option': false,
  'a fieldAccess that awaits': true,
  'a beforeWrite option': true,
  'an overridden handler': true,
  'a custom route': true,
}

for (const dialect of dialects) {
  describe(`promise hooks on ${dialect.name}`, () => {
    for (const [kind, hooks] of Object.entries(expected)) {
      // Only a PostgreSQL pool can cancel: elsewhere the hooks would cost without serving anything (checked
      // with the user code that turns them on over PostgreSQL).
      if (!hooks && dialect.name !== 'postgres') continue
      const wanted = hooks && dialect.name === 'postgres'
      test(`a viewset with ${kind}: the hooks are ${wanted ? 'on' : 'off'}`, { timeout: 30_000 }, async (t) => {
        let database: TestDatabase
        if (dialect.name === 'sqlite') {
          // A file the probe's process opens too.
          const directory = await mkdtemp(join(tmpdir(), 'vs-hooks-'))
          t.after(() => rm(directory, { recursive: true, force: true }))
          const url = `sqlite:${join(directory, 'probe.db')}`
          const db = createDatabase(url)
          t.after(() => db.destroy())
          database = { db, dialect: 'sqlite', url, queries: [] }
        } else {
          database = await testDatabase(t, dialect)
        }
        await createItemsTable(database)
        const { stdout } = await run(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/helpers/scope-hooks-probe.ts', kind], {
          env: { ...process.env, PROBE_DATABASE_URL: database.url },
        })
        assert.deepEqual(JSON.parse(stdout), { status: 200, hooks: wanted })
      })
    }
  })
}
