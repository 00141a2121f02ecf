import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { sqliteReaders, watchLimit } from '../../lib/dialect/sqlite/sqlite-readers.js'
import { isBetterSqliteDatabase, planReader } from '../../lib/dialect/sqlite/sqlite-statements.js'
import { statisticsReader } from '../../lib/dialect/sqlite/sqlite-statistics.js'

// A statement the statistics lifted to the main thread (`watched`) whose run was held up by the machine, not by its
// rows (a descheduled thread, a collection), goes to the readers only until a reader, timing the same statement
// with the same values, finds it quick; one that is slow there too stays on the readers.

interface Items { items: { id: number, owner: number, year: number } }

test('SQLite readers: a lifted statement comes back after a held-up run, and stays away when its rows are many',
  async (t) => {
    const directory = mkdtempSync(join(tmpdir(), 'recheck-'))
    const file = join(directory, 'recheck.db')
    const database = new Database(file)
    database.pragma('journal_mode = WAL')
    database.exec(`create table items (id integer primary key, owner integer not null, year integer not null);
      create index items_owner on items (owner);
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
      insert into items select i, i / 4, 1900 + i % 97 from n;
      analyze`)
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
