import { MysqlAdapter, PostgresAdapter, sql } from 'kysely'
import type { Kysely, Migration } from 'kysely'
import { migrate as migrateWith } from '../shared.js'

/** The example's schema, as Kysely migrations kept in code. */
const migrations: Record<string, Migration> = {
  '2026-11-01-items': {
    async up (db: Kysely<any>) {
      const adapter = db.getExecutor().adapter
      const postgres = adapter instanceof PostgresAdapter
      const mysql = adapter instanceof MysqlAdapter
      // created_at is set by the database, in UTC: timestamptz on PostgreSQL, datetime(3) on MySQL (the
      // pool's session is UTC), and on SQLite (which has no date type) RFC 3339 text in JavaScript's format.
      const createdAt = postgres
        ? { type: 'timestamptz', now: sql`now()` }
        : mysql
          ? { type: 'datetime(3)', now: sql`current_timestamp(3)` }
          : { type: 'varchar(32)', now: sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))` }
      await db.schema.createTable('items')
        .addColumn('id', postgres ? 'serial' : 'integer', (column) => postgres ? column.primaryKey() : column.primaryKey().autoIncrement())
        // unique: the constraint's index also serves lookups and ordering by name.
        .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
        .addColumn('description', 'varchar(1024)')
        .addColumn('created_at', sql.raw(createdAt.type), (column) => column.notNull().defaultTo(createdAt.now))
        .execute()
      // The default order is newest first.
      await db.schema.createIndex('items_created_at').on('items').columns(['created_at', 'id']).execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('items').execute()
    },
  },
}

/** Brings the database up to date; throws with the failing migration's error. */
export async function migrate (db: Kysely<any>): Promise<void> {
  await migrateWith(db, migrations)
}
