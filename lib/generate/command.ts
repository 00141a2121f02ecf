import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { databaseUrl } from '../db.js'
import { writeDatabaseTypes } from './db-writer.js'
import { isUntouched, withHeader, withoutPassword } from './header.js'
import { commentLine } from './naming.js'
import { planGeneration } from './plan.js'
import { readDatabase } from './read-database.js'
import { writeSchemas } from './schemas-writer.js'
import { writeServer } from './server-writer.js'
import { writeViewsets } from './viewsets-writer.js'

/** Options of {@link generate}, as the command line gives them. */
export interface GenerateOptions {
  /** The database (default: DATABASE_URL, from the environment or .env, else sqlite:base.db). */
  url?: string
  /** The folder written to (default `src/db`). */
  out?: string
  /** Only these tables and views (default: all of them). */
  tables?: readonly string[]
  /** Overwrite files edited since they were generated. */
  force?: boolean
  /** The key column of each view (`--key view=column`), or of a table with several unique columns. */
  keys?: ReadonlyMap<string, string>
  /** server.ts serves writes to anyone when JWT_SECRET is not set (it refuses to start so with NODE_ENV=production). */
  writable?: boolean
}

/** What a run wrote and decided. */
export interface GenerateResult {
  readonly files: readonly string[]
  readonly served: readonly string[]
  readonly links: readonly string[]
  readonly skipped: ReadonlyArray<{ readonly table: string; readonly reason: string }>
}

export const usage = `Usage: fastify-viewsets generate [--url <DATABASE_URL>] [--out src/db] [--tables a,b] [--force]
  [--key view=column] [--writable]

Writes db.ts (Kysely types), schemas.ts (TypeBox), viewsets.ts (registerAll) and server.ts from the database.
  --url     the database (default: DATABASE_URL, from the environment or .env)
  --out     the folder to write (default: src/db)
  --tables  only these tables and views, comma-separated
  --key     the key column of a view (repeatable): --key active_users=id
  --force   overwrite files that were edited since they were generated
  --writable  without JWT_SECRET, server.ts serves writes to anyone (never with NODE_ENV=production);
            by default it then serves reads only, and with JWT_SECRET writes need a token`

/** The command as the header records it: the options given, the URL without its password. */
function commandLine (options: GenerateOptions): string {
  const parts = ['npx fastify-viewsets generate']
  if (options.url !== undefined) parts.push(`--url ${withoutPassword(options.url)}`)
  if (options.out !== undefined) parts.push(`--out ${options.out}`)
  if (options.tables !== undefined) parts.push(`--tables ${options.tables.join(',')}`)
  for (const [view, column] of options.keys ?? []) parts.push(`--key ${view}=${column}`)
  if (options.writable === true) parts.push('--writable')
  // The header is a `//` comment: a name with a line break given on the command line must not end it.
  return commentLine(parts.join(' '))
}

/**
 * Writes typed, editable code for a database: db.ts, schemas.ts, viewsets.ts and server.ts.
 * Files edited since they were generated are kept unless `force` is set; then nothing is written.
 *
 * @example
 * ```ts
 * await generate({ url: 'sqlite:app.db', out: 'src/db' })
 * ```
 */
export async function generate (options: GenerateOptions = {}): Promise<GenerateResult> {
  const url = databaseUrl(options.url)
  const out = options.out ?? join('src', 'db')
  const catalog = await readDatabase(url, options.tables)
  const plan = planGeneration(catalog.dialect, catalog.tables, options.keys ?? new Map(), catalog.skipped)
  const command = commandLine(options)
  // The server keeps the URL only when it came from the command line and carries no password.
  const serverUrl = options.url !== undefined && withoutPassword(options.url) === options.url ? options.url : undefined
  const bodies: Record<string, string> = {
    'db.ts': writeDatabaseTypes(plan),
    'schemas.ts': writeSchemas(plan),
    'viewsets.ts': writeViewsets(plan),
    'server.ts': writeServer({ url: serverUrl, writable: options.writable === true }),
  }
  const files = Object.entries(bodies).map(([name, body]) => ({
    path: join(out, name),
    text: withHeader(body, command),
  }))
  const edited: string[] = []
  for (const file of files) {
    const existing = await readFile(file.path, 'utf8').catch(() => undefined)
    if (existing !== undefined && existing !== file.text && !isUntouched(existing)) edited.push(file.path)
  }
  if (edited.length > 0 && options.force !== true) {
    throw new Error(
      'refusing to overwrite files edited since they were generated: ' +
        `${edited.map((path) => relative(process.cwd(), path)).join(', ')} (use --force to overwrite them)`
    )
  }
  await mkdir(out, { recursive: true })
  for (const file of files) await writeFile(file.path, file.text)
  return {
    files: files.map((file) => file.path),
    served: plan.served.map((table) => table.catalog.name),
    links: plan.links,
    skipped: plan.skipped,
  }
}

/** Parses `generate`'s arguments. */
export function parseGenerateArguments (args: readonly string[]): GenerateOptions {
  const { values } = parseArgs({
    args: [...args],
    options: {
      url: { type: 'string' },
      out: { type: 'string' },
      tables: { type: 'string' },
      force: { type: 'boolean' },
      key: { type: 'string', multiple: true },
      writable: { type: 'boolean' },
    },
    strict: true,
  })
  const keys = new Map<string, string>()
  for (const entry of values.key ?? []) {
    const [view, column, ...rest] = entry.split('=')
    if (view === undefined || view === '' || column === undefined || column === '' || rest.length > 0) {
      throw new Error(`--key expects view=column, got ${JSON.stringify(entry)}`)
    }
    keys.set(view, column)
  }
  return {
    ...(values.url === undefined ? {} : { url: values.url }),
    ...(values.out === undefined ? {} : { out: values.out }),
    ...(values.tables === undefined
      ? {}
      : {
          tables: values.tables
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name !== ''),
        }),
    ...(values.force === true ? { force: true } : {}),
    ...(keys.size === 0 ? {} : { keys }),
    ...(values.writable === true ? { writable: true } : {}),
  }
}

/** The command line: `fastify-viewsets generate ...`; returns the exit code. */
export async function main (args: readonly string[]): Promise<number> {
  const [command, ...rest] = args
  if (command !== 'generate') {
    console.error(usage)
    return command === undefined || command === '--help' || command === '-h' ? 0 : 2
  }
  try {
    const result = await generate(parseGenerateArguments(rest))
    for (const file of result.files) console.log(`wrote ${relative(process.cwd(), file)}`)
    console.log(`served: ${result.served.join(', ') || 'none'}`)
    if (result.links.length > 0) {
      console.log(`link tables (the through of many-to-many relations): ${result.links.join(', ')}`)
    }
    for (const { table, reason } of result.skipped) console.log(`skipped ${table}: ${reason}`)
    return 0
  } catch (error) {
    console.error(`fastify-viewsets generate: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  }
}
