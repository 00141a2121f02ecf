import { Worker } from 'node:worker_threads'
import { SelectQueryNode } from 'kysely'
import type { CompiledQuery, RootOperationNode } from 'kysely'
import { boundedRows, costOf, declaredCost, learnsCost } from '../../execution/cost-class.js'
import { answersOneRow } from '../../execution/one-row.js'
import { WorkerPool } from '../../execution/worker-pool.js'
import type { DirectResult } from '../shared/connection.js'
import type { Row } from '../../sql.js'
import { planRows } from './sqlite-statistics.js'
import type { RowsPerKey } from './sqlite-statistics.js'

// better-sqlite3 runs each statement on the thread that calls it: on the event loop, one expensive read
// (a substring match over a million rows, a count, every child of a parent) held up every other request for
// its whole run (issue 36 measured 9 s). Heavy SELECTs (execution/cost-class.ts, and below the query plan)
// therefore run on a small pool of worker threads, each with its own read-only connection, which WAL lets read
// beside the writer; cheap ones (a key lookup, an index-served page) stay on the connection's fast path.
// Writes stay on the one writer connection. A `:memory:` database (one connection's own) and a better-sqlite3
// handle the user opened (withPreparedStatements) have no readers: everything runs on the main thread.

/** One job: a SELECT, its parameters, and whether it answers at most one row (read with `.get()`); `timed`: a
 * re-check, answered with the milliseconds the statement took on the reader instead of its rows. */
export interface ReadJob {
  readonly sql: string
  readonly parameters: readonly unknown[]
  readonly oneRow: boolean
  readonly timed?: boolean
}

/** What the worker is started with. */
export interface ReaderData {
  readonly file: string
  readonly busyTimeout: number
}

/** A plan line that reads every row: a table scan (or an index's, whole), a sort, a subquery per row. */
function heavyPlan (details: readonly string[], filtered: boolean): boolean {
  return details.some((detail) =>
    /TEMP B-TREE|CORRELATED/.test(detail) ||
    // A scan in an order the page wants stops at its LIMIT, unless a WHERE or join makes it skip rows.
    (filtered && /^SCAN /.test(detail) && !detail.includes('VIRTUAL TABLE')))
}

/** Reads the query plan of a statement: the `detail` column of `EXPLAIN QUERY PLAN`. */
export type PlanReader = (sql: string, parameters: readonly unknown[]) => string[]

/**
 * Where a statement runs: `main`, the connection's fast path; `reader`, a worker; `watched`, the main thread as well,
 * though its shape or its sort is heavy, because the statistics bound its rows (sqlite-statistics.ts): statistics
 * that went stale may be wrong, so a run past {@link watchLimit} (but its first) sends it to the readers, for good
 * unless a reader, running it again with the same values, finds it quick (the run was held up, not its rows).
 */
export type Placement = 'main' | 'reader' | 'watched'

/** Milliseconds a `watched` statement may hold the event loop: the p99 issue 36's attack bounds a key lookup to. */
export const watchLimit = 50

/** The heavy reads of one SQLite file, and the workers that run them. */
export interface SqliteReaders {
  /** Where a compiled statement runs: by its shape, its plan and the statistics; decided once per compiled node. */
  placement: (compiled: CompiledQuery) => Placement
  /**
   * A `watched` statement ran `ms` on the main thread (its wall time; past the limit, no more than the process's CPU
   * time since just before it, which bounds the thread's own from above): past {@link watchLimit}, it runs on a reader
   * from now on, and the re-check this returns runs it once on a reader, timed there, to bring it back if it is quick.
   */
  ran: (compiled: CompiledQuery, ms: number) => Promise<void> | undefined
  /** Runs a SELECT on a worker, answering as the main connection would. */
  run: (compiled: CompiledQuery) => Promise<DirectResult>
  close: () => Promise<void>
}

/** What sets the readers' bounds: createDatabase's options. */
export interface ReaderLimits {
  readonly workers: number
  readonly queueBound: number
  readonly statementTimeout: number
  readonly busyTimeout: number
}

/**
 * Starts one reader. From the built package, `sqlite-read-worker.js` beside the bundle's chunk that holds this code
 * (scripts/bundle.js writes it there, and fails the build if it cannot); from the TypeScript
 * sources (run through tsx, as the tests and examples are), the `.ts` file, through tsx's loader, which a worker
 * does not inherit from `--import tsx`.
 */
function startReader (data: ReaderData): Worker {
  const here = import.meta.url
  if (!here.endsWith('.ts')) return new Worker(new URL('./sqlite-read-worker.js', here), { workerData: data })
  const script = new URL('./sqlite-read-worker.ts', here).href
  const tsx = import.meta.resolve('tsx/esm/api')
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); ` +
    `return import(${JSON.stringify(script)}) })`
  return new Worker(code, { eval: true, workerData: data })
}

/** A blob cell comes back from a worker as a Uint8Array (structured clone): a Buffer, as better-sqlite3 reads it. */
function withBuffers (rows: Row[]): Row[] {
  for (const row of rows) {
    for (const name in row) {
      const value = row[name]
      if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
        row[name] = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      }
    }
  }
  return rows
}

function isRows (value: unknown): value is Row[] {
  return Array.isArray(value)
}

/** Where a statement runs by its shape, its declared class, its plan and the statistics (see {@link Placement}). */
function placementOf (compiled: CompiledQuery, plan: PlanReader, statistics: RowsPerKey): Placement {
  const { query } = compiled
  if (!SelectQueryNode.is(query)) return 'main'
  const declared = declaredCost(query)
  if (declared !== undefined) return declared === 'heavy' ? 'reader' : 'main'
  if (answersOneRow(query)) return 'main'
  const details = plan(compiled.sql, compiled.parameters)
  const filtered = query.where !== undefined || query.joins !== undefined
  if (costOf(query) !== 'heavy' && !heavyPlan(details, filtered)) return 'main'
  // Whatever its shape or its sort, a statement that the statistics say reads few rows is cheap.
  const rows = planRows(details, statistics, compiled.parameters.length)
  return rows !== undefined && rows <= boundedRows ? 'watched' : 'reader'
}

/**
 * The readers of a SQLite file: up to `workers` worker threads, started on demand. `plan` reads a statement's
 * plan on the main connection, and `statistics` the figures of the indexes it searches (once per compiled statement).
 *
 * @example
 * ```ts
 * const readers = sqliteReaders('/data/app.db', { workers: 2, queueBound: 50, statementTimeout: 30_000,
 *   busyTimeout: 5000 }, plan, statistics)
 * if (readers.placement(compiled) === 'reader') rows = await readers.run(compiled)
 * ```
 */
export function sqliteReaders (
  file: string,
  limits: ReaderLimits,
  plan: PlanReader,
  statistics: RowsPerKey
): SqliteReaders {
  const data: ReaderData = { file, busyTimeout: limits.busyTimeout }
  const pool = new WorkerPool({
    name: 'sqlite-readers',
    size: limits.workers,
    queueBound: limits.queueBound,
    timeout: limits.statementTimeout,
    start: () => startReader(data),
  })
  // No reader starts with the connection: a thread costs about 10 MiB, which an app that never reads heavily would
  // keep for nothing, so the first heavy read pays for starting it (within its statementTimeout).
  const verdicts = new WeakMap<RootOperationNode, Placement>()
  const judged = new WeakSet<RootOperationNode>()
  // One held-up run (a descheduled thread, a collection) is not the statement's work (analysis.md, "sqlite-recheck"):
  // a reader times it again, and a fifth of the limit there, however often its runs were held up, brings it back.
  const recheck = async ({ sql, parameters, query }: CompiledQuery): Promise<void> => {
    const ms = await pool.run({ sql, parameters, oneRow: false, timed: true } satisfies ReadJob).catch(() => undefined)
    if (typeof ms === 'number' && ms <= watchLimit / 5) verdicts.set(query, 'watched')
  }
  return {
    placement (compiled) {
      let placement = verdicts.get(compiled.query)
      if (placement === undefined) {
        // Not kept: cheap until a run read many rows (execution/cost-class.ts), then decided for good.
        if (learnsCost(compiled.query)) return 'main'
        placement = placementOf(compiled, plan, statistics)
        verdicts.set(compiled.query, placement)
      }
      return placement
    },
    ran (compiled, ms) {
      // A first run pays for a cold cache and code run for the first time (under valgrind, 50 ms): not judged.
      if (!judged.has(compiled.query)) {
        judged.add(compiled.query)
        return undefined
      }
      if (ms <= watchLimit) return undefined
      verdicts.set(compiled.query, 'reader')
      return recheck(compiled)
    },
    async run (compiled) {
      const job: ReadJob = {
        sql: compiled.sql,
        parameters: compiled.parameters,
        oneRow: answersOneRow(compiled.query),
      }
      const rows = await pool.run(job)
      if (!isRows(rows)) throw new Error('fastify-viewsets: a SQLite reader answered something else than rows')
      return { rows: withBuffers(rows) }
    },
    close: async () => { await pool.close() },
  }
}
