import { MysqlAdapter, PostgresAdapter, sql } from 'kysely'
import type { Kysely, Migration } from 'kysely'
import { migrate as runMigrations } from '../shared.js'

/** The example's schema, as Kysely migrations kept in code. */
const migrations: Record<string, Migration> = {
  '2026-11-01-items': {
    async up (db: Kysely<any>) {
      const adapter = db.getExecutor().adapter
      const postgres = adapter instanceof PostgresAdapter
      // A timezone-aware creation time, set by the database, in each dialect's spelling.
      const [createdType, createdDefault] = postgres
        ? ['timestamptz', sql`now()`]
        : adapter instanceof MysqlAdapter
          ? ['datetime(3)', sql`current_timestamp(3)`]
          : ['varchar(32)', sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`]
      await db.schema.createTable('items').ifNotExists()
        .addColumn('id', postgres ? 'serial' : 'integer', (column) => postgres ? column.primaryKey() : column.primaryKey().autoIncrement())
        .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
        .addColumn('description', 'varchar(1024)')
        .addColumn('price', 'real', (column) => column.notNull().defaultTo(0))
        .addColumn('created_at', createdType as 'timestamptz', (column) => column.notNull().defaultTo(createdDefault))
        .execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('items').ifExists().execute()
    },
  },
}

/** Brings the database up to date. */
export async function migrate (db: Kysely<any>): Promise<void> {
  await runMigrations(db, migrations)
}
