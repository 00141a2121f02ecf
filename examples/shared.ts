import { Migrator, PostgresAdapter, sql } from 'kysely'
import type { Kysely, Migration } from 'kysely'

/**
 * Brings a database up to date with migrations kept in code; throws with the failing migration's error.
 * Shared by the examples.
 */
export async function migrate (db: Kysely<any>, migrations: Record<string, Migration>): Promise<void> {
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
