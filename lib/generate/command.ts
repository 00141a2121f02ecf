import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { databaseUrl } from '../db.js'
import { writeDatabaseTypes } from './db-writer.js'
import type { FullTextArgument } from './full-text-option.js'
import { fullTextMigration, parseFullTextArgument, planFullTextSearch } from './full-text-option.js'
import type { CommentStart } from './header.js'
import { withHeader, withoutPassword } from './header.js'
import { moduleScope } from './module-scope.js'
import { commentLine } from './naming.js'
import { largeTableRows, planGeneration } from './plan.js'
import { readDatabase } from './read-database.js'
import { writeSchemas } from './schemas-writer.js'
import { writeServer } from './server-writer.js'
import { writeViewsets } from './viewsets-writer.js'
import type { FileOutcome } from './write-files.js'
import { newVersionSuffix, writeGenerated } from './write-files.js'

/** Options of {@link generate}, as the command line gives them. */
export interface GenerateOptions {
  /** The database (default: DATABASE_URL, from the environment or .env, else sqlite:base.db). */
  url?: string
  /** The folder written to (default `src/db`). */
  out?: string
  /** Only these tables and views (default: all of them). */
  tables?: readonly string[]
  /** Overwrite files edited since they were generated (by default: kept, the new version written as `.new`). */
  force?: boolean
  /** Write nothing: report which files differ from what the database gives now. */
  check?: boolean
  /** Keep secret-looking columns (`password`, `hash`, `salt`, `token`, `secret` in the name) in the schemas. */
  includeSecrets?: boolean
  /** The key column of each view (`--key view=column`), or of a table with several unique columns. */
  keys?: ReadonlyMap<string, string>
  /** server.ts serves writes to anyone when JWT_SECRET is not set (it refuses to start so with NODE_ENV=production). */
  writable?: boolean
  /**
   * `?q=` on these tables (`--full-text table:field1,field2`): their `fullText` option in viewsets.ts, and
   * `full-text.<dialect>.sql`, the migration that creates the index each needs.
   */
  fullText?: readonly FullTextArgument[]
  /** PostgreSQL's text search configuration of `fullText` (`--full-text-language`, default `simple`). */
  fullTextLanguage?: string
}

/** What a run wrote and decided. */
export interface GenerateResult {
  readonly files: readonly string[]
  /** What happened to each file: written, unchanged, or kept because it was edited. */
  readonly outcomes: readonly FileOutcome[]
  /** The `package.json` written to make the folder ES modules, when the project's is not. */
  readonly manifest: { readonly wrote?: string; readonly warning?: string }
  /** Tables over the size threshold: no `search`, `contains` or exact count. */
  readonly large: readonly string[]
  readonly served: readonly string[]
  readonly links: readonly string[]
  readonly skipped: ReadonlyArray<{ readonly table: string; readonly reason: string }>
  /** The tables `--full-text` serves `?q=` on, and the migration written for them (apply it before starting). */
  readonly fullText: { readonly tables: readonly string[]; readonly migration?: string }
}

export const usage = `Usage: fastify-viewsets generate [--url <DATABASE_URL>] [--out src/db] [--tables a,b] [--force]
  [--check] [--key view=column] [--writable] [--include-secrets] [--full-text table:field1,field2]
  [--full-text-language english]

Writes db.ts (Kysely types), schemas.ts (TypeBox), viewsets.ts (registerAll) and server.ts from the database.
  --url     the database (default: DATABASE_URL, from the environment or .env)
  --out     the folder to write (default: src/db)
  --tables  only these tables and views, comma-separated
  --key     the key column of a view (repeatable): --key active_users=id
  --force   overwrite files that were edited since they were generated (by default an edited file is
            kept and its new version written beside it as <file>.new)
  --check   write nothing; list the files that differ from what the database gives, exit 1 if any
  --writable  without JWT_SECRET, server.ts serves writes to anyone (never with NODE_ENV=production);
            by default it then serves reads only, and with JWT_SECRET writes need a token
  --include-secrets  keep columns whose name holds password, hash, salt, token or secret
            (left out of the schemas by default)
  --full-text  full-text search (?q=) on a table's text columns (repeatable): --full-text articles:title,body
            sets the viewset's fullText option and writes full-text.<sqlite|postgres|mysql>.sql, the migration
            that creates the index it needs (apply it before the server starts: startup checks the index)
  --full-text-language  PostgreSQL's text search configuration for --full-text (default: simple)
  -h, --help  print this and exit`

/** The command as the header records it: the options given, the URL without its password. */
function commandLine (options: GenerateOptions): string {
  const parts = ['npx fastify-viewsets generate']
  if (options.url !== undefined) parts.push(`--url ${withoutPassword(options.url)}`)
  if (options.out !== undefined) parts.push(`--out ${options.out}`)
  if (options.tables !== undefined) parts.push(`--tables ${options.tables.join(',')}`)
  for (const [view, column] of options.keys ?? []) parts.push(`--key ${view}=${column}`)
  if (options.writable === true) parts.push('--writable')
  if (options.includeSecrets === true) parts.push('--include-secrets')
  for (const { table, fields } of options.fullText ?? []) parts.push(`--full-text ${table}:${fields.join(',')}`)
  if (options.fullTextLanguage !== undefined) parts.push(`--full-text-language ${options.fullTextLanguage}`)
  // The header is a `//` comment: a name with a line break given on the command line must not end it.
  return commentLine(parts.join(' '))
}

/**
 * Writes typed, editable code for a database: db.ts, schemas.ts, viewsets.ts and server.ts. A file still as generated
 * is updated; one edited since is kept and its new version written beside it as `<file>.new`, unless `force`.
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
  const plan = planGeneration(catalog.dialect, catalog.tables, options.keys ?? new Map(), catalog.skipped, {
    includeSecrets: options.includeSecrets === true,
    rows: catalog.rows,
  })
  const fullText = planFullTextSearch(plan, options.fullText ?? [], options.fullTextLanguage)
  const command = commandLine(options)
  // The server keeps the URL only when it came from the command line and carries no password.
  const serverUrl = options.url !== undefined && withoutPassword(options.url) === options.url ? options.url : undefined
  const bodies: Record<string, string> = {
    'db.ts': writeDatabaseTypes(plan),
    'schemas.ts': writeSchemas(plan),
    'viewsets.ts': writeViewsets(plan, fullText),
    'server.ts': writeServer({ url: serverUrl, writable: options.writable === true }),
  }
  const migration = `full-text.${catalog.dialect}.sql`
  if (fullText.size > 0) {
    if (catalog.fullText === undefined) throw new Error(`--full-text: ${catalog.dialect} has no full-text search`)
    bodies[migration] = fullTextMigration(catalog.fullText, fullText)
  }
  const files = Object.entries(bodies).map(([name, body]) => ({
    path: join(out, name),
    text: withHeader(body, command, commentStart(name)),
  }))
  const check = options.check === true
  const outcomes = await writeGenerated(out, files, { force: options.force === true, check })
  return {
    files: files.map((file) => file.path),
    outcomes,
    manifest: await moduleScope(out, check),
    served: plan.served.map((table) => table.catalog.name),
    links: plan.links,
    skipped: plan.skipped,
    large: [...plan.large].filter((name) => plan.served.some((table) => table.catalog.name === name)),
    fullText: { tables: [...fullText.keys()], ...(fullText.size > 0 ? { migration: join(out, migration) } : {}) },
  }
}

/** How a generated file's comments begin, by its extension. */
function commentStart (file: string): CommentStart {
  return file.endsWith('.sql') ? '--' : '//'
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
      check: { type: 'boolean' },
      'include-secrets': { type: 'boolean' },
      key: { type: 'string', multiple: true },
      writable: { type: 'boolean' },
      'full-text': { type: 'string', multiple: true },
      'full-text-language': { type: 'string' },
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
    ...(values.check === true ? { check: true } : {}),
    ...(values['include-secrets'] === true ? { includeSecrets: true } : {}),
    ...(keys.size === 0 ? {} : { keys }),
    ...(values.writable === true ? { writable: true } : {}),
    ...(values['full-text'] === undefined ? {} : { fullText: values['full-text'].map(parseFullTextArgument) }),
    ...(values['full-text-language'] === undefined ? {} : { fullTextLanguage: values['full-text-language'] }),
  }
}

/** What a run says it did, a line each: files, served tables, and every table skipped or narrowed, with why. */
function report (result: GenerateResult, check: boolean): string[] {
  const path = (file: string) => relative(process.cwd(), file)
  const lines = result.outcomes.map(({ path: file, outcome }) => {
    if (outcome === 'kept') {
      return check
        ? `differs, edited since generated: ${path(file)}`
        : `kept ${path(file)}: edited since it was generated; its new version is ${path(file)}${newVersionSuffix} ` +
          '(merge it, or rerun with --force to overwrite)'
    }
    if (outcome === 'wrote') return check ? `differs: ${path(file)}` : `wrote ${path(file)}`
    return `unchanged ${path(file)}`
  })
  const { wrote, warning } = result.manifest
  if (wrote !== undefined) {
    lines.push(`${check ? 'would write' : 'wrote'} ${path(wrote)} ({ "type": "module" }): the generated files are ES ` +
      'modules, and the project\'s package.json is not "type": "module"')
  }
  if (warning !== undefined) lines.push(`warning: ${warning}`)
  lines.push(`served: ${result.served.join(', ') || 'none'}`)
  if (result.links.length > 0) {
    lines.push(`link tables (the through of many-to-many relations): ${result.links.join(', ')}`)
  }
  if (result.large.length > 0) {
    lines.push(`over ${largeTableRows.toLocaleString('en')} rows, so no search, no contains and no exact count ` +
      `(no index serves them): ${result.large.join(', ')}`)
  }
  for (const { table, reason } of result.skipped) lines.push(`skipped ${table}: ${reason}`)
  const { tables, migration } = result.fullText
  if (migration !== undefined) {
    lines.push(`full-text search (?q=) on ${tables.join(', ')}: apply ${path(migration)} before the server starts ` +
      '(its startup checks each index)')
  }
  return lines
}

/** The command line: `fastify-viewsets generate ...`; returns the exit code. */
export async function main (args: readonly string[]): Promise<number> {
  const [command, ...rest] = args
  if (command === undefined || command === '--help' || command === '-h' ||
    (command === 'generate' && (rest.includes('--help') || rest.includes('-h')))) {
    console.log(usage)
    return 0
  }
  if (command !== 'generate') {
    console.error(usage)
    return 2
  }
  try {
    const options = parseGenerateArguments(rest)
    const result = await generate(options)
    for (const line of report(result, options.check === true)) console.log(line)
    const differs = result.outcomes.some(({ outcome }) => outcome !== 'unchanged')
    return options.check === true && differs ? 1 : 0
  } catch (error) {
    console.error(`fastify-viewsets generate: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  }
}
