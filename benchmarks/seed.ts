import { copyFileSync, mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { postgresDatabase, postgresDatabasePrefix, seedRows } from './data.js'

/** Where a system finds the seeded data. */
export type DatabaseTarget = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string }

const sqliteTables = `
  create table authors (id integer primary key autoincrement, name text not null, email text not null);
  create table books (
    id integer primary key autoincrement,
    author_id integer not null references authors (id),
    title text not null,
    year integer not null,
    price real not null
  );
  create index books_author_id on books (author_id);
  create table tags (id integer primary key autoincrement, name text not null unique);
  create table book_tags (
    book_id integer not null references books (id),
    tag_id integer not null references tags (id),
    primary key (book_id, tag_id)
  );
  create index book_tags_tag_id on book_tags (tag_id);
  create table versioned_books (
    id integer primary key autoincrement,
    author_id integer not null references authors (id),
    title text not null,
    year integer not null,
    price real not null,
    version integer not null default 1
  );
`

const copyBooks =
  'insert into versioned_books (id, author_id, title, year, price) select id, author_id, title, year, price from books'

/** Removes a SQLite file with its WAL and shared-memory files, if there are any. */
function removeSqlite (file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
}

/** Writes a fresh SQLite file with the seed (any previous file and its WAL are removed). */
export function seedSqlite (file: string): DatabaseTarget {
  mkdirSync(dirname(file), { recursive: true })
  removeSqlite(file)
  const db = new Database(file)
  try {
    db.pragma('journal_mode = WAL')
    db.exec(sqliteTables)
    const rows = seedRows()
    const insert = (sql: string, values: unknown[][]) => {
      const statement = db.prepare(sql)
      for (const row of values) statement.run(row)
    }
    db.transaction(() => {
      insert('insert into authors (id, name, email) values (?, ?, ?)', rows.authors)
      insert('insert into books (id, author_id, title, year, price) values (?, ?, ?, ?, ?)', rows.books)
      insert('insert into tags (id, name) values (?, ?)', rows.tags)
      insert('insert into book_tags (book_id, tag_id) values (?, ?)', rows.bookTags)
      db.exec(copyBooks)
    })()
    db.exec('analyze')
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
  return { kind: 'sqlite', file }
}

/** A copy of a seeded SQLite file for one system (`bench.db` → `bench-raw.db`): the seed ends with its WAL checkpointed
 * and truncated, so the file is whole. */
export function copySqlite (target: Extract<DatabaseTarget, { kind: 'sqlite' }>, system: string): DatabaseTarget {
  const file = target.file.replace(/(\.db)?$/, `-${system}$1`)
  removeSqlite(file)
  copyFileSync(target.file, file)
  return { kind: 'sqlite', file }
}

/** The URL of the benchmark database: the same server, another database. */
export function postgresTarget (url: string): DatabaseTarget {
  const parsed = new URL(url)
  parsed.pathname = `/${postgresDatabase}`
  return { kind: 'postgres', url: parsed.toString() }
}

/** Runs one statement on its own connection to `url`. */
export async function admin (url: string, statement: string): Promise<void> {
  await withClient(url, async (client) => {
    await client.query(statement)
  })
}

/** Runs `use` on a connection to `url` of its own, closed afterwards. */
export async function withClient (url: string, use: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await use(client)
  } finally {
    await client.end()
  }
}

/** Whether a process of this machine has that id (EPERM: it exists, and belongs to another user). */
function running (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EPERM'
  }
}

/**
 * Drops the databases that runs which did not finish left behind: each is named after its run's process id,
 * so one whose process still runs here is left alone, even between its phases, when it holds no connection.
 * Without `force`, PostgreSQL refuses to drop a database that has connections (a run on another machine
 * that uses the same server, mid-measurement).
 */
export async function dropAbandoned (url: string): Promise<void> {
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [
      `${postgresDatabasePrefix}%`,
    ])
    for (const { datname } of rows) {
      // Only names that end in a process id are a run's (they are also safe to write into the statement).
      const suffix = datname.slice(postgresDatabasePrefix.length)
      if (datname === postgresDatabase || !/^\d+$/.test(suffix) || running(Number(suffix))) continue
      await client.query(`drop database if exists ${datname}`).catch(() => {})
    }
  })
}

/**
 * Creates this run's benchmark database on the server of `url` and seeds it. A database
 * of its own, rather than a schema, lets every system use its default configuration: Platformatic only
 * reads `current_schema()` and cannot be given a `search_path`.
 */
export async function seedPostgres (url: string): Promise<DatabaseTarget> {
  await dropAbandoned(url)
  await admin(url, `drop database if exists ${postgresDatabase} with (force)`)
  await admin(url, `create database ${postgresDatabase}`)
  const target = postgresTarget(url) as Extract<DatabaseTarget, { kind: 'postgres' }>
  const client = new pg.Client({ connectionString: target.url })
  await client.connect()
  try {
    await client.query(`
      create table authors (id serial primary key, name text not null, email text not null);
      create table books (
        id serial primary key,
        author_id integer not null references authors (id),
        title text not null,
        year integer not null,
        price double precision not null
      );
      create index books_author_id on books (author_id);
      create table tags (id serial primary key, name text not null unique);
      create table book_tags (
        book_id integer not null references books (id),
        tag_id integer not null references tags (id),
        primary key (book_id, tag_id)
      );
      create index book_tags_tag_id on book_tags (tag_id);
      create table versioned_books (
        id serial primary key,
        author_id integer not null references authors (id),
        title text not null,
        year integer not null,
        price double precision not null,
        version integer not null default 1
      );
    `)
    const rows = seedRows()
    // One statement per table: each column travels as an array and unnest() turns them into rows.
    const columns = <T extends unknown[]>(values: T[], index: number) => values.map((row) => row[index])
    await client.query('begin')
    await client.query(
      'insert into authors (id, name, email) select * from unnest($1::int[], $2::text[], $3::text[])',
      [columns(rows.authors, 0), columns(rows.authors, 1), columns(rows.authors, 2)]
    )
    await client.query(
      'insert into books (id, author_id, title, year, price) select * from unnest($1::int[], $2::int[], $3::text[], $4::int[], $5::float8[])',
      [0, 1, 2, 3, 4].map((index) => columns(rows.books, index))
    )
    await client.query('insert into tags (id, name) select * from unnest($1::int[], $2::text[])', [
      columns(rows.tags, 0),
      columns(rows.tags, 1),
    ])
    await client.query('insert into book_tags (book_id, tag_id) select * from unnest($1::int[], $2::int[])', [
      columns(rows.bookTags, 0),
      columns(rows.bookTags, 1),
    ])
    await client.query(copyBooks)
    // The explicit ids leave the sequences behind; POST must get fresh ones.
    for (const table of ['authors', 'books', 'tags', 'versioned_books']) {
      await client.query(`select setval(pg_get_serial_sequence('${table}', 'id'), (select max(id) from ${table}))`)
    }
    await client.query('commit')
    await client.query('analyze')
  } finally {
    await client.end()
  }
  return target
}

/** Drops the benchmark database (after a run). */
export async function dropPostgres (url: string): Promise<void> {
  await admin(url, `drop database if exists ${postgresDatabase} with (force)`)
}
