import { PostgresAdapter } from 'kysely'
import type { Kysely, Migration } from 'kysely'
import { migrate as runMigrations } from '../shared.js'

/** The example's schema, as Kysely migrations kept in code. */
const migrations: Record<string, Migration> = {
  '2026-11-01-items': {
    async up (db: Kysely<any>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter
      await db.schema.createTable('items')
        .addColumn('id', postgres ? 'serial' : 'integer', (column) => postgres ? column.primaryKey() : column.primaryKey().autoIncrement())
        .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
        .addColumn('description', 'varchar(1024)')
        .addColumn('price', 'real', (column) => column.notNull().defaultTo(0))
        // Who created the row: the `sub` claim of the token that POSTed it.
        .addColumn('owner', 'varchar(255)')
        .execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('items').execute()
    },
  },
}

/** Brings the database up to date. */
export async function migrate (db: Kysely<any>): Promise<void> {
  await runMigrations(db, migrations)
}
