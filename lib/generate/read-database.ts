import { existsSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { sql } from 'kysely'
import { createDatabase } from '../db.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import type { DialectFullText } from '../dialect/shared/full-text-index.js'
import { dialectOf } from '../dialect/pick-dialect.js'
import type { AnyDatabase } from '../sql.js'
import type { DialectName } from './column-types.js'
import { largeTableRows } from './plan.js'

/** The catalog of a database, as the dialect seam reads it. */
export interface DatabaseCatalog {
  readonly dialect: DialectName
  readonly tables: readonly TableCatalog[]
  /** Tables and views that cannot be served, and why. */
  readonly skipped: ReadonlyArray<{ readonly table: string; readonly reason: string }>
  /** The rows of each table and view, counted up to one past {@link largeTableRows}. */
  readonly rows: ReadonlyMap<string, number>
  /** How the database's full-text indexes are created (`--full-text`), when it has full-text search. */
  readonly fullText: DialectFullText | undefined
}

/**
 * Counts a table's rows, but reads no more than one past the threshold, so that a huge table costs no full scan. A
 * table the connection may not read counts as large: the generated options then stay on the safe side.
 */
async function boundedRows (db: AnyDatabase, table: string): Promise<number> {
  const bounded = db.selectFrom(table).select(sql<number>`1`.as('one')).limit(largeTableRows + 1).as('bounded')
  try {
    const row = await db.selectFrom(bounded).select((eb) => eb.fn.countAll().as('rows')).executeTakeFirst()
    return Number(row?.rows ?? 0)
  } catch {
    return largeTableRows + 1
  }
}

// Kysely reads `a.b` as the table b of the schema a, so a viewset cannot address a table whose name holds a dot
// (it would query another table or none); the catalog would look it up the same way.
const dotted = 'its name holds a dot, which Kysely reads as schema.table: rename it to serve it'

// Kysely's own bookkeeping is no resource.
const internal = /^kysely_migration(?:_lock)?$/

/**
 * Reads every table and view of the database at `url` (or only `only`), sorted by name, and closes
 * the connection.
 */
export async function readDatabase (url: string, only: readonly string[] | undefined): Promise<DatabaseCatalog> {
  // better-sqlite3 would create a missing file, and the command would then write code for an empty database.
  const file = /^sqlite:(.+)$/i.exec(url)?.[1]?.replace(/^\/\/(?=\/)/, '')
  if (
    file !== undefined && file !== ':memory:' &&
    !existsSync(isAbsolute(file) ? file : resolve(process.cwd(), file))
  ) {
    throw new Error(`there is no SQLite database at ${file}: pass --url, or set DATABASE_URL`)
  }
  const db = createDatabase<Record<string, Record<string, unknown>>>(url, { poolSize: 1 })
  try {
    const untyped: AnyDatabase = db
    const dialect = await dialectOf(untyped)
    const relations = await dialect.catalog.relations(untyped)
    const names = only ?? relations.map((relation) => relation.name).filter((name) => !internal.test(name))
    const known = new Set(relations.map((relation) => relation.name))
    const missing = names.filter((name) => !known.has(name))
    if (missing.length > 0) throw new Error(`--tables names tables that do not exist: ${missing.join(', ')}`)
    const tables: TableCatalog[] = []
    const rows = new Map<string, number>()
    const skipped = names.filter((name) => name.includes('.')).sort().map((table) => ({ table, reason: dotted }))
    for (const name of names.filter((entry) => !entry.includes('.')).sort()) {
      const table = await dialect.catalog.table(untyped, name)
      if (table === undefined) continue
      tables.push(table)
      rows.set(name, await boundedRows(untyped, name))
    }
    if (tables.length === 0) throw new Error('the database has no tables or views to serve')
    return { dialect: dialect.name, tables, skipped, rows, fullText: dialect.fullText }
  } finally {
    await db.destroy()
  }
}
