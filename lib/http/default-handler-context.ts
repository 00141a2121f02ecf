import type { Eventually } from '../execution/eventually.js'
import type { FastifyRequest } from 'fastify'
import type { ForeignKeyCheck } from '../data/foreign-key-check.js'
import type { TableGateway } from '../data/table-gateway.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { AfterWriteMethod, RowChange, RowContext, ScopedMethod, ViewsetToken, WriteMethod } from '../options.js'
import type { ListQueryPlan } from '../query/list-query.js'
import type { ScopeCondition } from '../query/scope.js'
import type { SoftDeletePlan } from '../query/soft-delete-term.js'
import type { BulkLimits } from './route-context.js'

/** What the default handlers read: the data layer, the options they apply, and the viewset's row rules. */
export interface DefaultHandlerContext {
  readonly resource: TableGateway
  readonly listQuery: ListQueryPlan
  /** LIST's plan narrowed to what the request's caller may name (field rules), when it is not `listQuery`. */
  readonly listPlanOf?: ((request: FastifyRequest) => ListQueryPlan | undefined) | undefined
  /** Where writes go (`db`) and where LIST and GET read (`readDb`). */
  readonly db: AnyDatabase
  readonly readDb: AnyDatabase
  /** The database this request's reads go to: `readDb`, or `db` after its client wrote (data/read-routing.ts). */
  readerOf(request: FastifyRequest): AnyDatabase
  /** The schema fields a body may write. */
  readonly writable: readonly string[]
  readonly conflictFields: readonly string[] | undefined
  /** An upsert's updating branch needs If-Match (a 428 without it). */
  readonly requireIfMatch: boolean
  /** The foreign keys a write checks against the GET rule of the tables they reference. */
  readonly foreignKeys: ForeignKeyCheck
  /** The viewset's `scope` for this request, compiled; `undefined` for no restriction. */
  scopeOf(request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined
  /** The viewset's `beforeWrite`: the values to write, or a promise of them; `trx` is the write's transaction. */
  beforeWrite(values: Row, context: RowContext<WriteMethod>, trx: AnyDatabase): unknown
  /** The viewset has a `beforeWrite` of its own: every write runs in a transaction, which it receives. */
  readonly beforeWriteInTransaction?: boolean
  /** Throws the 404 of this id. */
  notFound(id: unknown): never
  /** The viewset's soft delete (`softDelete`): DELETE and DELETE_MANY then mark rows deleted, not remove them. */
  readonly softDelete?: SoftDeletePlan | undefined
  /** The bounds of PATCH_MANY, DELETE_MANY and BULK_PATCH (http/bulk-write-handlers.ts), and the version they bump. */
  readonly bulkLimits?: BulkLimits
  /** The viewset's `afterWrite`, run in the write's transaction after each row written; `undefined` without one. */
  readonly afterWrite?:
    | ((trx: AnyDatabase, context: RowContext<AfterWriteMethod>, change: RowChange<Row>) => Promise<void>)
    | undefined
  /**
   * The history alone (`history`), without the viewset's `afterWrite`: the helpers (`this.insert`, `this.update`…)
   * record their writes with it; `context` is `undefined` outside a request (then no actor).
   */
  readonly recordHistory?: ((
    trx: AnyDatabase,
    method: AfterWriteMethod,
    context: RowContext<AfterWriteMethod> | undefined,
    change: RowChange<Row>
  ) => Promise<void>) | undefined
  /** {@link afterWrite} at once, present when it records the history alone and may (history-writer.ts recordNow). */
  readonly afterWriteNow?: ((
    trx: AnyDatabase,
    context: RowContext<AfterWriteMethod>,
    change: RowChange<Row>
  ) => Eventually<void>) | undefined
}
