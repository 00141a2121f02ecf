import { join } from 'node:path'
import pg from 'pg'
import { runChild } from './processes.js'
import type { DatabaseKind, Growth } from './results.js'

// The growth phase of `npm run bench` (issue 15's deep pages and issue 18's count on 1,000,000 rows):
// growth-app.ts runs in a plain-node child over dist/, once per database. The seeded table is kept
// between runs: a SQLite file in the data directory, and a PostgreSQL database of its own.

/** The PostgreSQL database that keeps the growth table between runs. */
export const growthDatabase = 'fastify_viewsets_growth'

async function postgresGrowthUrl (url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [growthDatabase])
    if (exists.rowCount === 0) await client.query(`create database ${growthDatabase}`)
  } finally {
    await client.end()
  }
  const parsed = new URL(url)
  parsed.pathname = `/${growthDatabase}`
  return parsed.toString()
}

export interface GrowthSettings {
  rows: number
  requests: number
  dataDir: string
  postgresUrl: string | undefined
}

/** Measures one database's growth figures. */
export async function measureGrowth (database: DatabaseKind, settings: GrowthSettings): Promise<Growth> {
  const url = database === 'sqlite'
    ? `sqlite:${join(settings.dataDir, `growth-${settings.rows}.db`)}`
    : await postgresGrowthUrl(settings.postgresUrl ?? '')
  return await runChild<Growth>('growth-app.ts', [database, url, String(settings.rows), String(settings.requests)])
}
