import { sql } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { prepareHistoryLock } from '../dialect/shared/history-lock.js'
import { invalidOption } from '../errors.js'
import type { AnyDatabase } from '../sql.js'
import type { ResolvedHistory } from './history-options.js'

// The history table, one per app (issue 39 item 3), as the README's migration creates it: one entry per row written,
// numbered by `position` (monotonic in commit order per `table_name`, dialect/shared/history-lock.ts).

/** The columns of the history table: what startup checks, the writer writes and the readers read. */
export const historyColumns = [
  'position', 'table_name', 'row_key', 'operation', 'at', 'actor', 'before', 'after',
] as const

/** The type of `before` and `after`: MySQL's `text` holds 64 KiB only. */
const rowTypes: Record<ViewsetDialect['name'], string> = { sqlite: 'text', postgres: 'text', mysql: 'longtext' }

/** Creates the history table and its indexes, as the README's migration does, unless they exist. */
async function createHistoryTable (db: AnyDatabase, table: string, dialect: ViewsetDialect['name']): Promise<void> {
  await db.schema.createTable(table).ifNotExists()
    .addColumn('position', dialect === 'sqlite' ? 'integer' : 'bigint', (column) => {
      const key = column.primaryKey()
      return dialect === 'postgres' ? key.generatedByDefaultAsIdentity() : key.autoIncrement()
    })
    .addColumn('table_name', 'varchar(255)', (column) => column.notNull())
    .addColumn('row_key', 'varchar(1024)', (column) => column.notNull())
    .addColumn('operation', 'varchar(16)', (column) => column.notNull())
    .addColumn('at', 'varchar(32)', (column) => column.notNull())
    .addColumn('actor', 'varchar(255)')
    .addColumn('before', sql.raw(rowTypes[dialect]))
    .addColumn('after', sql.raw(rowTypes[dialect]))
    .execute()
  if (dialect === 'mysql') {
    // InnoDB keys hold 3,072 bytes: the row key is indexed by its first 255 characters.
    const index = (name: string, columns: string) =>
      sql`create index if not exists ${sql.id(name)} on ${sql.table(table)} (${sql.raw(columns)})`.execute(db)
    await index(`${table}_row`, 'table_name, row_key(255), position')
    await index(`${table}_table`, 'table_name, position')
    return
  }
  await db.schema.createIndex(`${table}_row`).ifNotExists().on(table).columns(['table_name', 'row_key', 'position'])
    .execute()
  await db.schema.createIndex(`${table}_table`).ifNotExists().on(table).columns(['table_name', 'position']).execute()
}

/** Whether the history table is there with its columns. */
async function hasHistoryTable (db: AnyDatabase, table: string): Promise<boolean> {
  try {
    await db.selectFrom(table).select([...historyColumns]).limit(1).execute()
    return true
  } catch {
    return false
  }
}

/**
 * Checks at startup that the history table exists with its columns (and on MySQL/MariaDB its lock table), creating
 * them first with `createTable`; fails naming the table and the option otherwise (never in a request).
 *
 * @example
 * ```ts
 * await prepareHistoryTable(db, resolved.history, dialect.name, 'items')
 * ```
 */
export async function prepareHistoryTable (
  db: AnyDatabase,
  options: ResolvedHistory,
  dialect: ViewsetDialect['name'],
  viewsetTable: string
): Promise<void> {
  const { table, createTable } = options
  if (!(await hasHistoryTable(db, table))) {
    if (createTable) await createHistoryTable(db, table, dialect)
    if (!(await hasHistoryTable(db, table))) {
      invalidOption('history.table', `the history table "${table}" does not exist (or lacks the columns ` +
        `${historyColumns.join(', ')}): run the migration in the README, or set history: { createTable: true }`)
    }
  }
  const problem = await prepareHistoryLock(db, dialect, table, viewsetTable, createTable)
  if (problem !== undefined) invalidOption('history.table', problem)
}
