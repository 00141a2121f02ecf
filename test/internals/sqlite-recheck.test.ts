import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Worker } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import type { LogEvent } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { sqliteReaders, watchLimit } from '../../lib/dialect/sqlite/sqlite-readers.js'
import { isBetterSqliteDatabase, planReader } from '../../lib/dialect/sqlite/sqlite-statements.js'
import { statisticsReader } from '../../lib/dialect/sqlite/sqlite-statistics.js'

// A statement the statistics lifted to the main thread (`watched`) whose run was held up by the machine, not by its
// rows (a descheduled thread, a collection), goes to the readers only until a reader, timing the same statement
// with the same values, finds it quick; one that is slow there too stays on the readers.

interface Items { items: { id: number, owner: number, year: number } }

/** A WAL file in a new directory: 20,000 items, four an owner, analyzed (so that a page of one owner is lifted). */
function seededFile (prefix: string): { directory: string, file: string, database: Database.Database } {
  const directory = mkdtempSync(join(tmpdir(), prefix))
  const file = join(directory, 'items.db')
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  database.exec(`create table items (id integer primary key, owner integer not null, year integer not null);
    create index items_owner on items (owner);
    with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
    insert into items select i, i / 4, 1900 + i % 97 from n;
    analyze`)
  return { directory, file, database }
}

test('SQLite readers: a lifted statement comes back after a held-up run, and stays away when its rows are many',
  async (t) => {
    const { directory, file, database } = seededFile('recheck-')
    assert.ok(isBetterSqliteDatabase(database))
    const readers = sqliteReaders(file, { workers: 1, queueBound: 10, statementTimeout: 30_000, busyTimeout: 1000 },
      planReader(database), statisticsReader(database))
    const db = new Kysely<Items>({ dialect: new SqliteDialect({ database }) })
    t.after(async () => {
      await readers.close()
      await db.destroy()
      rmSync(directory, { recursive: true, force: true })
    })
    // Sorted by a column no index orders: heavy by its plan, lifted by four rows an owner.
    const page = db.selectFrom('items').selectAll().where('owner', '=', 7).orderBy('year').limit(3).compile()
    assert.equal(readers.placement(page), 'watched')
    assert.equal(readers.ran(page, 80), undefined, 'the first run is not judged')
    assert.equal(readers.ran(page, 1), undefined, 'a quick run changes nothing')
    assert.equal(readers.placement(page), 'watched')

    // A run held up past the limit: on a reader at once, back on the main thread once a reader found it quick.
    const held = readers.ran(page, watchLimit + 30)
    assert.equal(readers.placement(page), 'reader')
    await held
    assert.equal(readers.placement(page), 'watched')

    // As often as its runs are held up: each time a reader finds it as quick.
    for (let again = 0; again < 5; again++) {
      await readers.ran(page, watchLimit + 30)
      assert.equal(readers.placement(page), 'watched')
    }

    // Statistics gone stale: owner 8 now holds 1,000,000 rows (ANALYZE still says four), slow on a reader too.
    database.exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000000)
      insert into items select 100000 + i, 8, 1800 + i % 300 from n`)
    const crowded = db.selectFrom('items').selectAll().where('owner', '=', 8).orderBy('year').limit(3).compile()
    assert.equal(readers.placement(crowded), 'watched')
    readers.ran(crowded, 1)
    await readers.ran(crowded, watchLimit + 30)
    assert.equal(readers.placement(crowded), 'reader')
    // The reader still answers it, as the main connection would.
    const { rows } = await readers.run(crowded)
    assert.equal(rows.length, 3)
    assert.ok(rows.every((row) => row.owner === 8 && row.year === 1800))
  })

test('SQLite: a lifted statement held up without working starts no reader; one that works past the limit does',
  async (t) => {
    // What a watched run is judged by is the CPU time the process spent, when less than its wall time: a thread
    // descheduled by a loaded machine read no more rows than the statistics promised. Here the log, called
    // synchronously within the run, holds it up: asleep (no CPU time), then busy.
    const { directory, file, database: seeded } = seededFile('recheck-held-')
    seeded.close()
    let stall: 'asleep' | 'busy' | undefined
    const log = (event: LogEvent): void => {
      if (stall === undefined || event.level !== 'query' || !event.query.sql.includes('order by')) return
      const held = watchLimit + 30
      if (stall === 'asleep') {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, held)
        return
      }
      // Busy for `held` ms of CPU time, not of wall time: on a loaded machine a spin of 80 ms may get less of a core.
      const from = process.cpuUsage()
      const spent = (): number => {
        const { user, system } = process.cpuUsage(from)
        return (user + system) / 1000
      }
      while (spent() < held);
    }
    const started: Worker[] = []
    const onWorker = (worker: Worker): void => { started.push(worker) }
    process.on('worker', onWorker)
    const db = createDatabase<Items>(`sqlite:${file}`, { log, readWorkers: 1 })
    t.after(async () => {
      process.off('worker', onWorker)
      await db.destroy()
      rmSync(directory, { recursive: true, force: true })
    })
    // Compiled once, as a viewset's statements are: each is judged by its compiled node.
    const compiled = db.selectFrom('items').selectAll().where('owner', '=', 7).orderBy('year').orderBy('id').limit(3)
      .compile()
    const page = async (): Promise<number[]> => (await db.executeQuery(compiled)).rows.map((row) => row.id)
    assert.deepEqual(await page(), [28, 29, 30], 'the first run, not judged')
    stall = 'asleep'
    for (let run = 0; run < 3; run++) assert.deepEqual(await page(), [28, 29, 30])
    assert.equal(started.length, 0, 'no reader for runs held up asleep')
    stall = 'busy'
    assert.deepEqual(await page(), [28, 29, 30])
    stall = undefined
    for (let wait = 0; wait < 100 && started.length === 0; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(started.length, 1, 'a run busy past the limit sends the statement to a reader')
  })
