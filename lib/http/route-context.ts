import type { SoftDeletePlan } from '../query/soft-delete-term.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Precondition } from '../data/precondition.js'
import type { TableGateway } from '../data/table-gateway.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { Eventually } from '../execution/eventually.js'
import type { ViewsetMethod, ViewsetOptions, ViewsetToken } from '../options.js'
import type { FieldSelection, FieldsPlan } from '../query/fields.js'
import type { ViewsetComponents } from '../schema/components.js'
import type { JsonSchema } from '../schema/derive.js'
import type { Serializer } from '../schema/serializer.js'
import type { ListQuery } from '../query/list-query.js'
import type { CountPreference } from '../query/count-plan.js'
import type { FieldHiding } from './field-hiding.js'
import type { KeyPath } from './key-path.js'
import type { RowKey } from '../row-key.js'
import type { AggregatePlan } from '../query/aggregate.js'
import type { ListQueryPlan } from '../query/list-query.js'
import type { ScopeCondition } from '../query/scope.js'
import type { ScopedMethod } from '../options.js'
import type { ChangesTarget } from '../data/changes-page.js'
import type { HistorySource } from '../data/history-reader.js'
import type { KeyColumn } from '../data/history-writer.js'
import type { StoredColumn } from '../dialect/dialect.js'

/**
 * What a LIST answers: its rows, and for the default LIST what its route says in headers (`Link`,
 * `X-Total-Count`, the `?fields=` serializer). An overridden `list` answers its rows only.
 */
export interface ListPage<Rows = unknown> {
  readonly rows: Rows
  /** The parsed query of the default LIST; absent when an override answered. */
  readonly query?: ListQuery
  /** The number of matching rows, when counted. */
  readonly total?: number | undefined
  /** What `Preference-Applied` says of `total` (`count=exact` or `count=estimated`), when it is to say it. */
  readonly counted?: CountPreference | undefined
  /** With cursor pagination: the cursors of the `next` and `prev` links, absent when there is no such page. */
  readonly cursors?: { readonly next: string | undefined; readonly prev: string | undefined }
}

/** What a write by filter (PATCH_MANY, DELETE_MANY) changed: how many rows, and the rows (as stored, or as they were
 * when deleted). */
export interface ManyWritten {
  readonly affected: number
  readonly rows: Row[]
}

/** The bounds of the bulk writes (`maxAffected`, `maxBulk`), and the version column their updates increment. */
export interface BulkLimits {
  readonly maxAffected: number
  readonly maxBulk: number
  readonly versionField?: string | undefined
}

/**
 * The handlers a route calls: the default ones (http/default-handlers.ts), or the viewset's overrides
 * wrapped to the same shape. Each receives what its route parsed (the field selection, the If-Match
 * condition) and returns what the route answers; all but `createElements` may answer at once.
 */
export interface RouteHandlers {
  list(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<ListPage>
  getElement(
    request: FastifyRequest,
    reply: FastifyReply,
    token: ViewsetToken | null,
    selection: FieldSelection | undefined,
  ): Eventually<unknown>
  createElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Eventually<unknown>
  createElements(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<unknown>
  updateElement(
    request: FastifyRequest,
    reply: FastifyReply,
    token: ViewsetToken | null,
    partial: boolean,
    precondition: Precondition | undefined,
  ): Eventually<unknown>
  deleteElement(
    request: FastifyRequest,
    reply: FastifyReply,
    token: ViewsetToken | null,
    precondition: Precondition | undefined,
  ): Eventually<unknown>
  /** PATCH_MANY and DELETE_MANY (http/bulk-write-handlers.ts); `represent`: the rows are to be answered. */
  updateMany(
    request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null, represent: boolean,
  ): Promise<ManyWritten>
  deleteMany(
    request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null, represent: boolean,
  ): Promise<ManyWritten>
  /** BULK_PATCH: the rows as stored, in element order. */
  updateElements(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): Promise<Row[]>
}

/** What the routes document and validate: the schemas, names and limits of the OpenAPI operations. */
export interface RouteSchemas {
  /** The entity schema as served, with its `$id`. */
  readonly entity: JsonSchema & { readonly $id: string }
  /** The entity as the response serializer reads it (schema/derive.ts `deriveSerializerSchema`). */
  readonly serialized: JsonSchema
  readonly name: string
  /** The key's first column: the whole key unless it is composite. */
  readonly primaryKey: string
  /** The row key, one column or several (row-key.ts). */
  readonly key: RowKey
  /** A composite key's path form (key-path.ts); `undefined` for a single-column key. */
  readonly keyPath?: KeyPath | undefined
  readonly tags: readonly string[]
  /** The documented row, partial row and body components (schema/components.ts). */
  readonly components: ViewsetComponents
  /** LIST's query string (the subclass's `listQuery` merged in) and the headers of the default LIST. */
  readonly list: {
    readonly querystring: JsonSchema
    readonly headers?: Record<string, JsonSchema> | undefined
    /** The `Prefer` request header of the default LIST (`count=…`). */
    readonly prefer?: JsonSchema | undefined
    /** LIST's filters and `search` alone: the query string of PATCH_MANY and DELETE_MANY. */
    readonly filters?: JsonSchema | undefined
  }
  /** Most elements of one `POST /bulk` (and `PATCH /bulk`). */
  readonly maxBulk: number
  /** Most rows one PATCH_MANY or DELETE_MANY changes (`maxAffected`). */
  readonly maxAffected?: number
  /** A nested viewset's prefix parameters (`parent`), each as its column's field: every route's path has them. */
  readonly parentParams: Readonly<Record<string, JsonSchema>>
  /** The natural key of upserts: POST and BULK then document `Prefer`, the 200 of a merge and `Preference-Applied`. */
  readonly conflictFields: readonly string[] | undefined
}

/** Who may call which method. */
export interface RouteAuth {
  readonly protectedMethods: readonly ViewsetMethod[]
  readonly options: Pick<ViewsetOptions<unknown, never, never>, 'authenticate' | 'authorize'>
  /** Whether tokens can be verified (@fastify/jwt or `authenticate`): then open methods verify one when it is sent. */
  readonly verifiesTokens: boolean
}

/** How a row's ETag is made and required. */
export interface RouteVersions {
  /** Serializes a whole row, relations included, as GET sends it: what a representation's ETag hashes. */
  readonly represent: Serializer
  /** The version column (`versionField`), whose value is the ETag. */
  readonly versionField: string | undefined
  /** PUT, PATCH and DELETE without If-Match answer 428. */
  readonly requireIfMatch: boolean
}

/** What the routes of one viewset are declared from, once the data layer is built. */
export interface RouteContext {
  /** Loads the relations of the rows a handler answers. */
  readonly resource: TableGateway
  /** Where relations of LIST and GET rows are read (`readDb`), and of written rows (`db`). */
  readonly readDb: AnyDatabase
  /** The database a request's reads go to: `readDb`, or `db` inside its client's read-after-write window. */
  readerOf(request: FastifyRequest): AnyDatabase
  readonly db: AnyDatabase
  readonly schemas: RouteSchemas
  readonly auth: RouteAuth
  readonly versions: RouteVersions
  readonly paging: { readonly maxOffset: number; readonly pagination: 'offset' | 'cursor' }
  /** `?fields=` of LIST and GET. */
  readonly fields: FieldsPlan
  /** The full prefix of the viewset's routes, for `Location`. */
  readonly prefix: string
  /** The viewset's table, as the `table` option names it: what its traces and metrics are labelled with. */
  readonly table: string
  /** The field rules its routes apply, or `undefined` when none can (http/field-hiding.ts). */
  readonly hiding: FieldHiding | undefined
  /** What `GET {prefix}/aggregate` reads, when `methods` lists AGGREGATE. */
  readonly aggregate?: AggregateContext | undefined
  /** With `softDelete`: who may see deleted rows (`?deleted=`), and RESTORE's and PURGE's handlers. */
  readonly softDelete?: SoftDeleteRouting | undefined
  /** What `GET {prefix}/:id/history` and `?as_of=` read, with the `history` option. */
  readonly history?: HistoryContext | undefined
  /** What `GET {prefix}?changed_since=` reads, when the viewset has `changes: true`. */
  readonly changes?: ChangesContext | undefined
}

/** What the routes of a soft-deleting viewset read (http/soft-delete-handlers.ts): its plan, RESTORE and PURGE. */
export interface SoftDeleteRouting {
  readonly plan: SoftDeletePlan
  /** RESTORE: the row marked live again, as stored, or the 404 thrown. */
  restore(request: FastifyRequest, token: ViewsetToken | null, precondition: Precondition | undefined): Eventually<Row>
  /** PURGE: the row removed for good, or the 404 thrown. */
  purge(request: FastifyRequest, token: ViewsetToken | null, precondition: Precondition | undefined): Eventually<void>
}

/** What the history's routes read: where the entries are, how the row is keyed, its columns, and the row rules. */
export interface HistoryContext {
  readonly source: HistorySource
  readonly keyColumns: readonly KeyColumn[]
  /** The table's columns (a hard-deleted row's rule is evaluated on its last stored version of them). */
  readonly catalog: readonly StoredColumn[]
  /** A stored row as documented (the schema's columns, none required). */
  readonly row: JsonSchema
  /** `limit`'s bounds, LIST's. */
  readonly limits: { readonly maxLimit: number; readonly defaultLimit: number }
  scopeOf(request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined
}

/** What `changed_since` reads: the history of the table, LIST's plan (its filters, `fields`, paging) and row rules. */
export interface ChangesContext {
  readonly target: ChangesTarget
  readonly list: ListQueryPlan
  scopeOf(request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined
}

/** What AGGREGATE reads: its plan, LIST's (its filters, search and paging), and the viewset's row rules. */
export interface AggregateContext {
  readonly plan: AggregatePlan
  readonly list: ListQueryPlan
  scopeOf(request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod): ScopeCondition | undefined
}
