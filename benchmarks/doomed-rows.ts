import Database from 'better-sqlite3'
import pg from 'pg'
import type { DatabaseTarget } from './seed.js'

// The rows the DELETE scenario deletes. Before each DELETE measurement (outside the timed window) the
// runner inserts a fresh batch of books, more than the fastest system can delete in that time, and each
// request deletes the next one, once: every request deletes a row that exists and answers 2xx, and no
// system runs out of rows or deletes another's. The rows left over are removed after the measurement,
// so that the table is the same for every system and round. They belong to author 1 and are titled
// "Doomed …", never read by the other scenarios (which run before DELETE and pick seeded ids).

/** A batch of rows to delete, handed out one id at a time. */
export interface DoomedRows {
  /** Inserts `count` rows and makes them the batch (the previous batch's leftovers are removed first). */
  refill(count: number): Promise<void>
  /** The next row's id; once the batch is used up, 0 (a 404 that the run reports as non-2xx: the runner sizes batches
   * so that it does not happen). */
  take(): number
  /** How many ids of the batch were taken. */
  taken(): number
  /** Removes the rows of the batch that were not deleted. */
  clear(): Promise<void>
  close(): Promise<void>
}

const title = "'Doomed ' || n"

function batch (
  insert: (count: number) => Promise<number[]>,
  clear: () => Promise<void>,
  close: () => Promise<void>
): DoomedRows {
  let ids: number[] = []
  let next = 0
  return {
    async refill (count) {
      await clear()
      ids = await insert(count)
      next = 0
    },
    take: () => ids[next++] ?? 0,
    taken: () => Math.min(next, ids.length),
    clear,
    close,
  }
}

function sqliteRows (file: string): DoomedRows {
  const db = new Database(file)
  db.pragma('busy_timeout = 5000')
  const insert = db.prepare<[number], { id: number }>(
    `with recursive numbers(n) as (select 1 union all select n + 1 from numbers where n < ?)
     insert into books (author_id, title, year, price) select 1, ${title}, 2000, 1 from numbers returning id`
  )
  const remove = db.prepare("delete from books where author_id = 1 and title glob 'Doomed *'")
  return batch(
    async (count) => insert.all(count).map((row) => row.id),
    async () => {
      remove.run()
    },
    async () => {
      db.close()
    }
  )
}

function postgresRows (url: string): DoomedRows {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  // An idle connection the server closes (the database dropped at the end) must not crash the runner.
  pool.on('error', () => {})
  return batch(
    async (count) =>
      (
        await pool.query<{ id: number }>(
          `insert into books (author_id, title, year, price) select 1, ${title}, 2000, 1 from generate_series(1, $1) as n returning id`,
          [count]
        )
      ).rows.map((row) => row.id),
    async () => {
      await pool.query("delete from books where author_id = 1 and title like 'Doomed %'")
    },
    async () => {
      await pool.end()
    }
  )
}

export function doomedRows (target: DatabaseTarget): DoomedRows {
  return target.kind === 'sqlite' ? sqliteRows(target.file) : postgresRows(target.url)
}
