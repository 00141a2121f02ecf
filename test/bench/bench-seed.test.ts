import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { test } from 'node:test'
import { postgresDatabasePrefix } from '../../benchmarks/data.js'
import { admin, dropAbandoned, withClient } from '../../benchmarks/seed.js'
import { dialects } from '../helpers/database.js'

// The benchmark's PostgreSQL databases are named after their run's process id: seeding drops those of runs
// that are gone, never the database of a run whose process is still alive (its connections may all be closed
// between two phases).

const postgres = dialects.find((dialect) => dialect.name === 'postgres')

async function databases (url: string): Promise<string[]> {
  let names: string[] = []
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${postgresDatabasePrefix}%`])
    names = rows.map((row) => row.datname)
  })
  return names
}

if (postgres !== undefined) {
  test('seeding drops the benchmark databases of runs that are gone, and keeps those of runs still alive', { timeout: 30_000 }, async (t) => {
    const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
    t.after(() => alive.kill())
    const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
    await once(gone, 'exit')
    const kept = `${postgresDatabasePrefix}${String(alive.pid)}`
    const dropped = `${postgresDatabasePrefix}${String(gone.pid)}`
    const foreign = `${postgresDatabasePrefix}notapid`
    for (const name of [kept, dropped, foreign]) await admin(postgres.url, `create database ${name}`)
    t.after(async () => { for (const name of [kept, dropped, foreign]) await admin(postgres.url, `drop database if exists ${name}`) })

    await dropAbandoned(postgres.url)

    const left = await databases(postgres.url)
    assert.ok(left.includes(kept), `${kept} belongs to a process that still runs: kept`)
    assert.ok(!left.includes(dropped), `${dropped} belongs to a process that exited: dropped`)
    assert.ok(left.includes(foreign), `${foreign} is not named after a process id: never touched`)
  })
}
