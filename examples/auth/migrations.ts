import { Migrator, PostgresAdapter, sql } from 'kysely'
import type { Kysely, Migration } from 'kysely'

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

/** Brings the database up to date; throws with the failing migration's error. */
export async function migrate (db: Kysely<any>): Promise<void> {
  // Kysely looks for its migration table in every schema; on PostgreSQL, pin it to the current
  // one, or a kysely_migration table in another schema would be taken for ours.
  const schema = db.getExecutor().adapter instanceof PostgresAdapter
    ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
    : undefined
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  const { error } = await migrator.migrateToLatest()
  if (error !== undefined) throw error
}
