import type { TestContext } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Kysely, RawBuilder, SqlBool } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import type { CreateDatabaseOptions } from 'fastify-viewsets'
import type { TestDatabase } from './database.js'

/**
 * A createDatabase pool on a PostgreSQL test database, tagged with an application name of its own, and
 * `active(condition)`: how many of its statements pg_stat_activity shows running and matching `condition`.
 */
export function taggedPool<DB> (
  t: TestContext,
  database: TestDatabase,
  options: CreateDatabaseOptions = {}
): { db: Kysely<DB>; active: (condition: RawBuilder<SqlBool>) => Promise<number> } {
  const application = `vs_tagged_${process.pid}_${Date.now()}`
  const url = new URL(database.url)
  url.searchParams.set('application_name', application)
  const db = createDatabase<DB>(url.toString(), options)
  t.after(() => db.destroy())
  const active = async (condition: RawBuilder<SqlBool>) =>
    Number(
      (
        await sql<{
          n: string
        }>`select count(*) as n from pg_stat_activity where application_name = ${application} and state = 'active' and ${condition}`.execute(
          database.db
        )
      ).rows[0]?.n
    )
  return { db, active }
}

/** Polls `count` every 20 ms until it is not 0, at most `tries` times; answers its last value. */
export async function untilSeen (count: () => Promise<number>, tries: number): Promise<number> {
  let seen = 0
  for (let i = 0; i < tries && seen === 0; i++) {
    await setTimeout(20)
    seen = await count()
  }
  return seen
}
