import type { FastifyInstance, RouteHandlerMethod, RouteOptions } from 'fastify'
import { ChangeFeed } from '../changes/change-feed.js'
import { openStream, wantsStream } from '../changes/change-stream.js'
import type { StreamPlan } from '../changes/change-stream.js'
import { changeKeyOf } from '../data/change-key.js'
import { jsonTextDecoder } from '../data/json-text.js'
import type { ResolvedChanges } from '../data/changes-options.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import type { CatalogColumn } from '../dialect/shared/catalog.js'
import { urlOf } from '../dialect/shared/database-urls.js'
import { listenForChanges } from '../dialect/postgres/postgres-listener.js'
import { invalidOption } from '../errors.js'
import { underlyingDatabase } from '../execution/request-transaction.js'
import type { DefaultHandlers } from '../http/default-handlers.js'
import type { RouteContext } from '../http/route-context.js'
import { isRecord } from '../schema/object-schema.js'
import { propertiesOf } from '../schema/derive.js'
import type { TObject } from '@sinclair/typebox'
import type { RelationLoader } from '../relations/batched-loader.js'

// Mounting `changes`: the LIST route also answers `Accept: text/event-stream` with the viewset's change feed
// (changes/), documented as a second content of its 200; the feed ends its streams when the app closes.

/** What the feed's mounting reads: the viewset's checked options and schema, its table, its routes' context. */
export interface ChangeMount {
  readonly declaration: {
    readonly resolved: { readonly changes: ResolvedChanges | undefined }
    readonly schema: TObject
    readonly columns: readonly string[]
  }
  readonly table: {
    readonly dialect: ViewsetDialect
    readonly described: { readonly columns: readonly CatalogColumn[] }
  }
  readonly context: RouteContext
  readonly defaults: DefaultHandlers
  /** The loader of the relation fields, whose rule slots the events' loads are grouped by. */
  readonly relations: Pick<RelationLoader, 'ruleSlots' | 'fields'> | undefined
}

/** The URL of PostgreSQL's one `LISTEN` connection, or `undefined` to poll. */
function listenUrl (changes: ResolvedChanges, { table: { dialect }, context }: ChangeMount): string | undefined {
  if (dialect.name !== 'postgres' || changes.listen === false) return undefined
  return changes.listen ?? urlOf(underlyingDatabase(context.db))
}

/** The feed and what its streams are opened with. */
function streamPlan (changes: ResolvedChanges, mount: ChangeMount): StreamPlan {
  const { context, defaults, declaration, table: { dialect } } = mount
  const handlers = defaults.context
  const url = listenUrl(changes, mount)
  const table = context.table
  const db = underlyingDatabase(context.db)
  const feed = new ChangeFeed({
    db,
    historyTable: changes.historyTable,
    versions: {
      table,
      catalog: mount.table.described.columns,
      selected: context.resource.target.columns,
      storedRows: dialect.syntax.storedRows,
      decode: jsonTextDecoder(declaration),
    },
    pollInterval: changes.pollInterval ?? (url === undefined ? 500 : 5000),
    listen: url === undefined
      ? undefined
      : (wake) => listenForChanges(url, (written) => { if (written === table) wake() }),
  })
  return {
    feed,
    options: changes,
    db,
    table,
    list: handlers.listQuery,
    listPlanOf: (request) => handlers.listPlanOf?.(request),
    scopeOf: (request, token, method) => handlers.scopeOf(request, token, method),
    readerOf: (request) => handlers.readerOf(request),
    serializeRow: context.versions.represent,
    hiding: context.hiding !== undefined,
    key: changeKeyOf(context.schemas.key, propertiesOf(context.schemas.entity)),
    relations: {
      db,
      hasRelations: context.resource.hasRelations,
      fields: mount.relations?.fields ?? new Set(),
      slots: mount.relations?.ruleSlots ?? [],
      load: (on, rows, only, request) => context.resource.load(on, rows, only, request),
    },
    defaultRelations: context.fields.defaultRelations,
    searchesVersions: dialect.fullText?.matchIsolated ?? false,
  }
}

/** The stream, as the second content of LIST's 200. */
const streamContent = {
  schema: {
    type: 'string',
    description: 'With `Accept: text/event-stream`: Server-Sent Events of the changes to the rows the filters and ' +
      'the caller\'s rules admit: `insert` and `update` (data: the row as LIST serializes it), `delete` (data: ' +
      '`{"key":{...}}`), each with its position as `id:`; `reset` (resumed past the retention: list again) and ' +
      '`end` (data: `{"reason":...}`). See the README\'s "Live changes".',
  },
}

/** LIST's 200 documents the stream too, and LIST reads `Last-Event-ID`. */
function documented (schema: Record<string, unknown>, response: Record<string, unknown>): Record<string, unknown> {
  const ok = isRecord(response[200]) ? response[200] : {}
  const content = isRecord(ok.content) ? ok.content : {}
  const headers = isRecord(schema.headers) ? schema.headers : { type: 'object', properties: {} }
  const properties = isRecord(headers.properties) ? headers.properties : {}
  const lastEventId = {
    type: 'string',
    description: 'With `Accept: text/event-stream`: the `id:` of the last event received; the stream resumes after it',
  }
  return {
    ...schema,
    response: { ...response, 200: { ...ok, content: { ...content, 'text/event-stream': streamContent } } },
    headers: { ...headers, properties: { ...properties, 'last-event-id': lastEventId } },
  }
}

/**
 * The routes, LIST answering the change feed too when `changes` is on (it needs LIST); the feed's streams end on
 * `app.close()`.
 *
 * @example
 * ```ts
 * const routes = changeFeedRoutes(fastify, viewsetRoutes(methods, handlers, context), mount)
 * ```
 */
export function changeFeedRoutes (
  fastify: FastifyInstance, routes: RouteOptions[], mount: ChangeMount
): RouteOptions[] {
  const { changes } = mount.declaration.resolved
  if (changes === undefined) return routes
  const list = routes.find((route) => route.method === 'GET' && route.url === '')
  if (list === undefined) return invalidOption('changes', 'needs the LIST method (the feed is served on the LIST URL)')
  const plan = streamPlan(changes, mount)
  // preClose, not onClose: an open stream is an in-flight request, which the server's close would wait for.
  fastify.addHook('preClose', async () => { await plan.feed.close() })
  const page = list.handler
  const handler: RouteHandlerMethod = function (request, reply) {
    if (wantsStream(request)) return openStream(plan, request, reply)
    return page.call(this, request, reply)
  }
  const schema = isRecord(list.schema) ? list.schema : {}
  const response = isRecord(schema.response) ? schema.response : {}
  return routes.map((route) => (route === list ? { ...route, handler, schema: documented(schema, response) } : route))
}
