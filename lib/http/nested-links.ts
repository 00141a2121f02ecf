import type { FastifyReply, FastifyRequest } from 'fastify'
import { ViewsetErrors } from '../errors.js'
import type { ViewsetToken } from '../options.js'
import type { ScopeCondition } from '../query/scope.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { RouteContext } from './route-context.js'

// The link rows of a many-to-many a nested write sets (http/nested-writes.ts). When a viewset serves the link table
// (a composite-keyed `book_tags`), each link is written as that viewset's own routes write its rows (issue 39): added
// by its POST (beforeWrite, WITH CHECK, afterWrite and its history), removed by its DELETE (so a soft-deleting one
// marks the link deleted, and only links in its DELETE rule are the caller's to remove), and a link it marked deleted
// that the body sends again is restored by its RESTORE. With no such viewset, link rows are plain rows of the table.

/** The link table of a many-to-many: its name and the columns naming the parent and the target. */
export interface LinkTable {
  readonly table: string
  readonly sourceKey: string
  readonly targetKey: string
}

/** The viewset serving a link table, as a nested write reaches it. */
export interface LinkViewset {
  readonly defaults: DefaultHandlers
  readonly context: RouteContext
}

/** What one link set writes: the parent's key, the targets sent, and the targets the caller may read. */
export interface LinkSet {
  readonly through: LinkTable
  readonly parent: unknown
  readonly keys: ReadonlyArray<string | number>
  /** The target table and its key: only links to the targets its rule (`rule`) admits are the caller's. */
  readonly target: { readonly table: string, readonly key: string, readonly rule: ScopeCondition | undefined }
}

/**
 * The request of one link's write through the link viewset (its body and key, the parent's token), once the link
 * viewset's own authentication of `method` passed (its protectedMethods and authorize).
 */
export type LinkRequest = (method: LinkMethod, body: Row | undefined, id: unknown) => Promise<FastifyRequest>

/** The methods of the link viewset a link set writes with. */
type LinkMethod = 'POST' | 'DELETE' | 'RESTORE'

/** `select <key> from <target table> where <its rule>`: the targets the caller may read. */
function readable (trx: AnyDatabase, { table, key, rule }: LinkSet['target']) {
  return trx.selectFrom(table).select(key)
    .$if(rule !== undefined, (query) => query.where((eb) => rule?.where ?? eb.lit(true)))
}

/** The targets sent that the parent has no link to (among the links `live` admits), each once. */
async function missingTargets (trx: AnyDatabase, set: LinkSet, live: ScopeCondition | undefined) {
  const { through, parent, keys } = set
  const linked = await trx.selectFrom(through.table).select(through.targetKey).where(through.sourceKey, '=', parent)
    .$if(live !== undefined, (query) => query.where((eb) => live?.where ?? eb.lit(true))).execute()
  const present = new Set(linked.map((link) => String(link[through.targetKey])))
  return [...new Map(keys.map((key) => [String(key), key])).entries()]
    .filter(([text]) => !present.has(text)).map(([, key]) => key)
}

/**
 * Sets the links of `set.parent` to exactly `set.keys` among the readable targets, as plain rows of the link table:
 * one DELETE of the others, one INSERT of the missing ones.
 */
export async function setPlainLinks (trx: AnyDatabase, set: LinkSet): Promise<void> {
  const { through, parent, keys } = set
  await trx.deleteFrom(through.table).where(through.sourceKey, '=', parent)
    .where(through.targetKey, 'in', readable(trx, set.target))
    .$if(keys.length > 0, (query) => query.where(through.targetKey, 'not in', keys))
    .execute()
  const added = await missingTargets(trx, set, undefined)
  if (added.length === 0) return
  await trx.insertInto(through.table)
    .values(added.map((key) => ({ [through.sourceKey]: parent, [through.targetKey]: key }))).execute()
}

/**
 * Sets the links of `set.parent` through the viewset serving the link table (see the file's comment), in the nested
 * write's transaction `trx`, which that viewset's handlers join (data/ambient-transaction.ts).
 */
export async function setServedLinks (
  trx: AnyDatabase,
  set: LinkSet,
  served: { readonly link: LinkViewset, readonly request: FastifyRequest, readonly reply: FastifyReply },
  linkRequest: LinkRequest
): Promise<void> {
  const { through, parent, keys } = set
  const { link, request, reply } = served
  const token = request.viewsetToken ?? null
  const { key } = link.context.resource.target
  // The links to targets the caller may read, in the link viewset's DELETE rule, but those sent: in target order.
  const rule = link.defaults.context.scopeOf(request, token, 'DELETE')
  const removed = await trx.selectFrom(through.table).select([...key.columns]).where(through.sourceKey, '=', parent)
    .where(through.targetKey, 'in', readable(trx, set.target))
    .$if(keys.length > 0, (query) => query.where(through.targetKey, 'not in', keys))
    .$if(rule !== undefined, (query) => query.where((eb) => rule?.where ?? eb.lit(true)))
    .orderBy(through.targetKey).execute()
  for (const row of removed) {
    const removal = await linkRequest('DELETE', undefined, key.of(row))
    await link.defaults.deleteElement(removal, removal.viewsetToken ?? null, undefined)
  }
  const softDelete = link.context.softDelete
  const missing = await missingTargets(trx, set, softDelete?.plan.live)
  // A link marked deleted is the same row (its key is the link's): restored, not inserted again.
  const marked = softDelete === undefined || missing.length === 0
    ? []
    : await trx.selectFrom(through.table).select([...new Set([...key.columns, through.targetKey])])
      .where(softDelete.plan.deleted.where).where(through.sourceKey, '=', parent)
      .where(through.targetKey, 'in', missing).orderBy(through.targetKey).execute()
  for (const row of marked) {
    const restoral = await linkRequest('RESTORE', undefined, key.of(row))
    if (softDelete !== undefined) await restoreLink(softDelete, restoral, restoral.viewsetToken ?? null)
  }
  const restored = new Set(marked.map((row) => String(row[through.targetKey])))
  for (const target of missing.filter((missed) => !restored.has(String(missed)))) {
    const body = { [through.sourceKey]: parent, [through.targetKey]: target }
    const creation = await linkRequest('POST', body, undefined)
    await link.defaults.createElement(creation, reply, creation.viewsetToken ?? null)
  }
}

/** Restores one link; outside the link viewset's RESTORE rule it cannot be linked again: a 409, as a taken key. */
async function restoreLink (
  softDelete: NonNullable<RouteContext['softDelete']>, request: FastifyRequest, token: ViewsetToken | null
): Promise<void> {
  try {
    await softDelete.restore(request, token, undefined)
  } catch (error) {
    if (error instanceof ViewsetErrors.NotFound) throw new ViewsetErrors.Conflict('A link to this row exists already')
    throw error
  }
}
