import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Precondition } from '../data/precondition.js'
import { inElement } from '../data/bulk-conflicts.js'
import type { AfterRow } from '../data/gateway-results.js'
import { upsertBranches } from '../data/upsert-branches.js'
import { deleteRow } from '../data/soft-delete.js'
import { inTransaction } from '../data/write-check.js'
import { ambientDatabase } from '../data/ambient-transaction.js'
import type { AnyDatabase, Row } from '../sql.js'
import { invalidFields } from '../errors.js'
import type { FieldError } from '../errors.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import { currentCancellation, withCancellation } from '../execution/cancellation.js'
import type { AfterWriteMethod, RowContext, ViewsetToken, WriteMethod } from '../options.js'
import type { CursorPosition } from '../query/cursor.js'
import { encodeCursor } from '../query/cursor.js'
import type { FieldSelection } from '../query/fields.js'
import { parseListQuery } from '../query/list-query.js'
import type { ListQuery } from '../query/list-query.js'
import type { ScopeCondition } from '../query/scope.js'
import type { CountPreference } from '../query/count-plan.js'
import { isRecord } from '../schema/object-schema.js'
import { countPreference, ignoreDuplicates, mergeDuplicates, resolutionPreference } from './prefer-header.js'
import { preconditionOf } from './conditional-requests.js'
import { bodyWithoutKey } from './key-path.js'
import type { ListPage } from './route-context.js'
import type { DefaultHandlerContext } from './default-handler-context.js'

// The default handlers: what LIST, GET, POST, BULK, PUT, PATCH and DELETE do when the viewset does not
// override them. Each reads what its route parsed (the field selection, the If-Match condition) as an
// argument and returns what its route answers; nothing travels back through the request.

/** A LIST's count, and whether it is the planner's estimate. */
interface Total {
  readonly total: number
  readonly kind: CountPreference
}

/**
 * A page's `total` and what `Preference-Applied` says of it: said when a `Prefer` header asked for a count, or
 * when the count could have been an estimate (`allowCount: 'estimated'`).
 */
function applied (
  counted: Total | undefined,
  query: ListQuery,
  preferred: CountPreference | undefined
): Pick<ListPage, 'total' | 'counted'> {
  if (counted === undefined) return {}
  const said = preferred !== undefined || query.estimate
  return { total: counted.total, counted: said ? counted.kind : undefined }
}

/** The `:id` of an element route: its params schema requires it. */
function idOf (request: FastifyRequest): unknown {
  return isRecord(request.params) ? request.params.id : undefined
}

/** Answers an applied merge: 201 when a row was created, else 200, and says so in `Preference-Applied` (RFC 7240). */
function applyMerge (reply: FastifyReply, created: boolean, ignore = false): void {
  reply.code(created ? 201 : 200).header('preference-applied', ignore ? ignoreDuplicates : mergeDuplicates)
}

/** The values `beforeWrite` returned, when they are values. */
function writtenValues (written: unknown): Row {
  if (!isRecord(written)) {
    throw new TypeError(
      `beforeWrite returned ${written === null ? 'null' : typeof written}: it must return the values to write`
    )
  }
  return written
}

/**
 * The default handlers of one mounted viewset. Each answers at once where the database answered at once
 * (execution/eventually.ts), else with a promise; `createElements` always with a promise.
 */
export class DefaultHandlers {
  readonly #context: DefaultHandlerContext

  constructor (context: DefaultHandlerContext) {
    this.#context = context
  }

  /** What these handlers read: the bulk writes' handlers (bulk-write-handlers.ts) read it too. */
  get context (): DefaultHandlerContext { return this.#context }

  /** {@link #beforeWrite}, for the bulk writes' handlers: `trx` is their write's transaction. */
  beforeWriteOf (values: Row, context: RowContext<WriteMethod>, trx: AnyDatabase): Eventually<Row> {
    return this.#beforeWrite(values, context, trx)
  }

  /** What `beforeWrite` makes of the values, checked: a promise only when it answered one (the default answers at
   * once, and POST and PATCH then await nothing). */
  #beforeWrite (values: Row, context: RowContext<WriteMethod>, trx: AnyDatabase): Eventually<Row> {
    const written = this.#context.beforeWrite(values, context, trx)
    // Any thenable is awaited, as `await` would; the answer is then a native promise.
    return isRecord(written) && typeof written.then === 'function'
      ? Promise.resolve(written).then(writtenValues)
      : writtenValues(written)
  }

  /** The viewset's `afterWrite` for the rows this request writes with `method`, or `undefined` without one. */
  #afterRow (request: FastifyRequest, token: ViewsetToken | null, method: AfterWriteMethod): AfterRow | undefined {
    const { afterWrite, afterWriteNow } = this.#context
    if (afterWrite === undefined) return undefined
    const context = { request, token, method }
    const row = async (trx: AnyDatabase, before: Row | null, after: Row | null): Promise<void> => {
      await afterWrite(trx, context, { before, after })
    }
    if (afterWriteNow === undefined) return row
    return Object.assign(row, {
      now: (trx: AnyDatabase, before: Row | null, after: Row | null) => afterWriteNow(trx, context, { before, after }),
    })
  }

  /**
   * Runs `write` (of new rows) as it is without `afterWrite`; with one, in a transaction (`db`'s, or its own), then
   * `afterWrite` of each row it created, in order.
   */
  #creating<T extends Row | Row[]> (
    after: AfterRow | undefined,
    write: (db: AnyDatabase) => Eventually<T>,
    db: AnyDatabase
  ): Eventually<T> {
    if (after === undefined) return write(db)
    return inTransaction(db, async (trx) => {
      const written = await write(trx)
      for (const row of Array.isArray(written) ? written : [written]) await after(trx, null, row)
      return written
    })
  }

  /** Runs a write (`beforeWrite`, then its statements) in a transaction `beforeWrite` receives when the viewset has
   * one (issue 38 item 8); else on `db` as it is, at once where the database answers at once. */
  #inWrite<T> (request: FastifyRequest, work: (db: AnyDatabase) => Eventually<T>): Eventually<T> {
    // Inside a nested write (data/ambient-transaction.ts), in its transaction.
    const db = ambientDatabase(this.#context.db, request)
    const transactional = this.#context.beforeWriteInTransaction === true
    return transactional ? inTransaction(db, async (trx) => await work(trx)) : work(db)
  }

  /** `beforeWrite`'s values for element `index` of a bulk body: an error it throws names the element (`/3/field`). */
  async #inElement (index: number, values: () => Eventually<Row>): Promise<Row> {
    try {
      return await values()
    } catch (error) {
      throw inElement(error, index)
    }
  }

  /** The fields of a body that may be written: read-only fields and relations are dropped. */
  writable (body: unknown): Row {
    const values: Row = {}
    if (!isRecord(body)) return values
    for (const field of this.#context.writable) {
      const value = body[field]
      if (value !== undefined) values[field] = value
    }
    return values
  }

  /** LIST: the query string parsed (every client mistake a 400 before the first query), then the page read. */
  list (request: FastifyRequest, token: ViewsetToken | null): Eventually<ListPage<Row[]>> {
    const { resource, listQuery } = this.#context
    const readDb = this.#context.readerOf(request)
    const preferred = countPreference(request.headers.prefer)
    // Paths through relations read only the related rows their tables' rules admit for this request.
    const rules = { db: readDb, request: { request, token } }
    const plan = this.#context.listPlanOf?.(request) ?? listQuery
    const scope = this.#context.scopeOf(request, token, 'LIST')
    const given = isRecord(request.query) ? request.query : {}
    const query = parseListQuery(given, plan, preferred, rules, scope !== undefined)
    if (query.pagination === 'cursor' || query.count) return this.#listWithExtras(query, scope, preferred, readDb)
    return andThen(resource.list(readDb, query, scope), (rows) => ({ rows, query }))
  }

  /**
   * LIST by cursor, or with the number of matching rows: the page, then the count, one statement after the other
   * so that a request holds one connection at a time.
   */
  async #listWithExtras (
    query: ListQuery,
    scope: ScopeCondition | undefined,
    preferred: CountPreference | undefined,
    readDb: AnyDatabase
  ): Promise<ListPage<Row[]>> {
    const { resource } = this.#context
    const context = currentCancellation()
    const counted = async () => await withCancellation(context, () => this.#total(query, scope, readDb))
    if (query.pagination === 'cursor') {
      const page = await resource.cursorPage(readDb, query, scope)
      const total = query.count ? await counted() : undefined
      const cursor = (position: CursorPosition | undefined) =>
        position === undefined ? undefined : encodeCursor(query.ordering, position)
      const cursors = { next: cursor(page.next), prev: cursor(page.prev) }
      return { rows: page.rows, query, ...applied(total, query, preferred), cursors }
    }
    const rows = await resource.list(readDb, query, scope)
    return { rows, query, ...applied(await counted(), query, preferred) }
  }

  /**
   * The number of matching rows: the planner's estimate when the query allows one, the dialect gives one, and it is
   * at least `countEstimateThreshold`; else counted. A request a row rule restricts is counted unless
   * `estimateWithRules`.
   */
  async #total (query: ListQuery, scope: ScopeCondition | undefined, readDb: AnyDatabase): Promise<Total> {
    const { resource, listQuery: { counting } } = this.#context
    if (query.estimate && (scope === undefined || counting.withRules)) {
      const context = currentCancellation()
      const estimate = await resource.estimate(readDb, query, scope)
      if (estimate !== undefined && estimate >= counting.threshold) return { total: estimate, kind: 'estimated' }
      return { total: await withCancellation(context, () => resource.count(readDb, query, scope)), kind: 'exact' }
    }
    return { total: await resource.count(readDb, query, scope), kind: 'exact' }
  }

  /** GET: one row (in the scope), with only the `selection`'s columns when `?fields=` chose some, or 404. */
  getElement (request: FastifyRequest, token: ViewsetToken | null, selection?: FieldSelection): Eventually<Row> {
    const scope = this.#context.scopeOf(request, token, 'GET')
    const id = idOf(request)
    return andThen(this.#context.resource.find(this.#context.readerOf(request), id, { selection, scope }), (row) =>
      row === undefined ? this.#context.notFound(id) : row
    )
  }

  /** POST: inserts what `beforeWrite` makes of the writable fields sent; with Prefer merge-duplicates, upserts. */
  createElement (request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<Row> {
    const sent = this.writable(request.body)
    const resolution = this.resolution(request)
    if (resolution !== undefined) return this.#upsertOne(request, reply, token, sent, resolution === ignoreDuplicates)
    // The caller must be able to read what it creates: the row as stored must be in the GET rule.
    const check = this.#context.scopeOf(request, token, 'GET')
    const context = { request, token, method: 'POST' } as const
    return this.#inWrite(request, (db) => andThen(this.#beforeWrite(sent, context, db), (values) =>
      this.#creating(this.#afterRow(request, token, 'POST'), (on) =>
        this.#context.foreignKeys.around(on, [values], { request, token }, false, (trx) =>
          this.#context.resource.insert(trx, values, check)), db)
    ))
  }

  /** POST with `Prefer: resolution=merge-duplicates` (or `ignore-duplicates`: a 204 when ignored): one element. */
  async #upsertOne (
    request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null, sent: Row, ignore: boolean
  ): Promise<Row> {
    this.#checkConflictFields([sent], false)
    const [written] = await this.#upsert(request, token, [sent], false, ignore)
    applyMerge(reply, written?.created ?? false, ignore)
    if (written === undefined) reply.code(204) // the row was ignored: nothing to answer (the route sends no body)
    return written?.row ?? {}
  }

  /**
   * Upserts the elements, each on its branch (data/upsert-branches.ts): `beforeWrite` told `'POST'` (`'BULK'`) where
   * one creates and `'PATCH'` where it updates, the update under PATCH's rule and the request's If-Match.
   */
  async #upsert (request: FastifyRequest, token: ViewsetToken | null, sent: readonly Row[], bulk: boolean,
    ignore: boolean) {
    const { resource, requireIfMatch } = this.#context
    const db = ambientDatabase(this.#context.db, request)
    const precondition = preconditionOf(request.headers['if-match'], requireIfMatch)
    const created = bulk ? 'BULK' : 'POST'
    // Each beforeWrite, then the write, in the request's cancellation scope (execution/cancellation.ts).
    const scope = currentCancellation()
    return await upsertBranches(resource, db, {
      sent,
      bulk,
      ignore,
      prepare: async (fields, creates, index, trx) => await withCancellation(scope, () => {
        const values = () => this.#beforeWrite(fields, { request, token, method: creates ? created : 'PATCH' }, trx)
        return bulk ? this.#inElement(index, values) : values()
      }),
      // The tag compared is of the row as this request's GET serves it: its relations under its rules.
      precondition: precondition?.kind === 'match' ? { ...precondition, reader: { request, token } } : precondition,
      rules: {
        updated: this.#context.scopeOf(request, token, 'PATCH'),
        created: this.#context.scopeOf(request, token, 'GET'),
      },
      live: this.#context.softDelete?.live,
      checkKeys: async (trx, values) => {
        await this.#context.foreignKeys.checkOf(trx, values, { request, token }, bulk)?.(trx)
      },
      afterWrite: this.#afterUpserted(request, token, created),
    })
  }

  /** An upsert's `afterWrite`: told the method `beforeWrite` was told on each element's branch. */
  #afterUpserted (request: FastifyRequest, token: ViewsetToken | null, created: 'POST' | 'BULK') {
    const afterCreated = this.#afterRow(request, token, created)
    const afterUpdated = this.#afterRow(request, token, 'PATCH')
    if (afterCreated === undefined || afterUpdated === undefined) return undefined
    return async (trx: AnyDatabase, creates: boolean, before: Row | null, after: Row) => {
      await (creates ? afterCreated : afterUpdated)(trx, before, after)
    }
  }

  /** BULK: inserts (or with Prefer merge-duplicates, upserts) every element, all or none, in element order. */
  async createElements (request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<Row[]> {
    const bodies: unknown[] = Array.isArray(request.body) ? request.body : []
    const sent = bodies.map((body) => this.writable(body))
    const context = { request, token, method: 'BULK' } as const
    const { resource } = this.#context
    // The write starts after beforeWrite's awaits: in the request's cancellation scope (execution/cancellation.ts).
    const scope = currentCancellation()
    const resolution = this.resolution(request)
    if (resolution === undefined) {
      const check = this.#context.scopeOf(request, token, 'GET')
      return await this.#inWrite(request, async (db) => {
        const values: Row[] = []
        for (const [index, fields] of sent.entries()) {
          values.push(await this.#inElement(index, () => this.#beforeWrite(fields, context, db)))
        }
        return await withCancellation(scope, () => this.#creating(this.#afterRow(request, token, 'BULK'), (trx) =>
          this.#context.foreignKeys.around(trx, values, { request, token }, true, (on) =>
            resource.insertMany(on, values, check)), db))
      })
    }
    this.#checkConflictFields(sent, true)
    const ignore = resolution === ignoreDuplicates
    const written = await this.#upsert(request, token, sent, true, ignore)
    // Ignoring, only created rows are answered: 201 when there is one, else 200 `[]`.
    const created = ignore ? written.length > 0 : written.length === 0 || written.some((entry) => entry.created)
    applyMerge(reply, created, ignore)
    return written.map((entry) => entry.row)
  }

  /** How this request resolves duplicates: with `conflictFields`, the `resolution` the client prefers (merge or ignore
   * them); else none, and the header is ignored, as RFC 7240 says. */
  resolution (request: FastifyRequest) {
    return this.#context.conflictFields === undefined ? undefined : resolutionPreference(request.headers.prefer)
  }

  /** A body that merges must send every conflict field, with a value: else a 400 naming each one missing (`email`, or
   * `/3/email` in a bulk body). */
  #checkConflictFields (bodies: readonly Row[], bulk: boolean): void {
    const errors: FieldError[] = []
    bodies.forEach((body, index) => {
      for (const field of this.#context.conflictFields ?? []) {
        if (body[field] === undefined || body[field] === null) {
          errors.push({
            in: 'body',
            field: bulk ? `/${index}/${field}` : field,
            message: `is required (not null) with Prefer: ${mergeDuplicates}`,
          })
        }
      }
    })
    if (errors.length > 0) throw invalidFields(errors)
  }

  /**
   * PUT (`partial` false) and PATCH (`partial` true): updates the row (in the scope) with what `beforeWrite`
   * returns, if `precondition` (If-Match, or requireIfMatch's 428) holds; the row, or 404.
   */
  updateElement (
    request: FastifyRequest,
    token: ViewsetToken | null,
    partial: boolean,
    precondition: Precondition | undefined
  ): Eventually<Row> {
    const method = partial ? 'PATCH' : 'PUT'
    const id = idOf(request)
    const { resource, foreignKeys } = this.#context
    const scope = this.#context.scopeOf(request, token, method)
    const after = this.#afterRow(request, token, method)
    const sent = bodyWithoutKey(resource.target.key, this.writable(request.body), id)
    return this.#inWrite(request, (on) => andThen(this.#beforeWrite(sent, { request, token, method }, on),
      // The precondition is checked with the write, after the scope: a 404, 428 or 412 changes nothing; then the
      // row as written must still be in the scope (else a 403, nothing changed). The foreign keys written are checked
      // once the row is found in the scope and its precondition holds.
      (values) => andThen(resource.update(on, id, values, scope, precondition, scope,
        foreignKeys.checkOf(on, [values], { request, token }, false), after), (row) =>
        row === undefined ? this.#context.notFound(id) : row
      )
    ))
  }

  /** DELETE: removes the row (in the scope) if `precondition` holds, or 404; with `softDelete`, marks it deleted. */
  deleteElement (
    request: FastifyRequest,
    token: ViewsetToken | null,
    precondition: Precondition | undefined
  ): Eventually<void> {
    const scope = this.#context.scopeOf(request, token, 'DELETE')
    const id = idOf(request)
    const after = this.#afterRow(request, token, 'DELETE')
    const { resource, softDelete } = this.#context
    const db = ambientDatabase(this.#context.db, request)
    return andThen(deleteRow(resource, db, id, softDelete, scope, precondition, after), (found) => {
      if (!found) this.#context.notFound(id)
    })
  }
}
