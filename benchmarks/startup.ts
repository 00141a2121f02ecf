import { mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { runChild } from './processes.js'
import type { DocsStartup, Startup } from './results.js'

// Startup with many viewsets (issue 18: 50 viewsets to `app.ready()` under 1 s on SQLite): a SQLite file
// with one table per viewset, then a few fresh plain-node processes (startup-app.ts), medians reported.

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

function seedTables (file: string, tables: number): void {
  mkdirSync(dirname(file), { recursive: true })
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
  const db = new Database(file)
  try {
    db.pragma('journal_mode = WAL')
    for (let index = 1; index <= tables; index++) {
      db.exec(`create table table_${index} (id integer primary key autoincrement, name text not null, email text not null,
        age integer not null, active integer not null default 1, joined text not null)`)
    }
  } finally {
    db.close()
  }
}

/** Measures the startup of an app with `viewsets` viewsets, `runs` times in fresh processes. */
export async function measureStartup (file: string, viewsets = 50, runs = 5): Promise<Startup> {
  seedTables(file, viewsets)
  const samples: Array<Pick<Startup, 'totalMs' | 'importMs' | 'readyMs'>> = []
  for (let run = 0; run < runs; run++) samples.push(await runChild('startup-app.ts', [file, String(viewsets)]))
  const pick = (key: 'totalMs' | 'importMs' | 'readyMs') => Math.round(median(samples.map((sample) => sample[key])))
  return { viewsets, database: 'sqlite', totalMs: pick('totalMs'), importMs: pick('importMs'), readyMs: pick('readyMs'), runs }
}

/**
 * The first `GET /docs/json` of an app with `viewsets` viewsets and viewsetDocs (issue 42, 5: linear in the number of
 * viewsets, 200 under 1 s), `runs` times in fresh processes, medians.
 */
export async function measureDocs (file: string, viewsets: number, runs = 3): Promise<DocsStartup> {
  seedTables(file, viewsets)
  const samples: Array<{ readyMs: number, docsMs: number }> = []
  for (let run = 0; run < runs; run++) samples.push(await runChild('startup-app.ts', [file, String(viewsets), 'docs']))
  const pick = (key: 'readyMs' | 'docsMs') => Math.round(median(samples.map((sample) => sample[key])))
  return { viewsets, readyMs: pick('readyMs'), firstDocsMs: pick('docsMs'), runs }
}
