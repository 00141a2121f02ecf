import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import type { TestDialect } from './database.js'

// The history table of issue 39's pinned layout, created by hand for the readers' tests (changed_since, the hostile
// corpus) where the history writer's `createTable` is not there to make it.

/** The default history table's name. */
export const historyTable = 'viewset_history'

/** Creates `viewset_history` (position, table_name, row_key, operation, at, actor, before, after) and its indexes. */
export async function createHistoryTable (db: Kysely<any>, dialect: TestDialect['name']): Promise<void> {
  await db.schema
    .createTable(historyTable)
    .addColumn('position', dialect === 'sqlite' ? 'integer' : 'bigint', (column) =>
      dialect === 'postgres' ? column.primaryKey().generatedByDefaultAsIdentity() : column.primaryKey().autoIncrement())
    .addColumn('table_name', 'varchar(255)', (column) => column.notNull())
    .addColumn('row_key', 'varchar(1024)', (column) => column.notNull())
    .addColumn('operation', 'varchar(16)', (column) => column.notNull())
    .addColumn('at', 'varchar(32)', (column) => column.notNull())
    .addColumn('actor', 'varchar(255)')
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .execute()
  if (dialect === 'mysql') {
    // InnoDB keys hold 3,072 bytes: the row key is indexed by its first 255 characters, as the history's migration.
    await sql`create index viewset_history_rows on ${sql.table(historyTable)} (table_name, row_key(255), position)`
      .execute(db)
  } else {
    await db.schema.createIndex('viewset_history_rows').on(historyTable).columns(['table_name', 'row_key', 'position'])
      .execute()
  }
  await db.schema.createIndex('viewset_history_positions').on(historyTable).columns(['table_name', 'position'])
    .execute()
}
