import type { FastifyInstance } from 'fastify'
import type { IndexReportEntry } from './index-report.js'
import { viewsetsOf } from './registry.js'

// The app's side of the index report (index-report.ts): the entries each viewset's mounting kept in the registry.

/**
 * The index report of every viewset of the app: each filter, ordering, cursor ordering, search
 * field and relation key whose statement would scan a table for want of an index, read from the catalog at
 * startup. `search` and `contains` are always listed (no B-tree index serves a substring match), and so are
 * relation paths in filters and orderings (a subquery per row). Complete once the app is ready.
 *
 * @example
 * ```ts
 * await app.ready()
 * for (const entry of viewsetIndexReport(app)) {
 *   app.log.warn(`${entry.viewset}: ${entry.use} on ${entry.field} scans "${entry.table}": ${entry.reason}`)
 * }
 * ```
 */
export function viewsetIndexReport (app: FastifyInstance): readonly IndexReportEntry[] {
  return viewsetsOf(app).flatMap((entry) => entry.indexReport ?? [])
}
