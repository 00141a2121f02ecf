import type { FastifyReply, FastifyRequest } from 'fastify'
import { BulkWriteHandlers } from '../http/bulk-write-handlers.js'
import type { DefaultHandlers } from '../http/default-handlers.js'
import type { RouteHandlers } from '../http/route-context.js'
import type { ViewsetToken } from '../options.js'
import { serving } from '../execution/served-request.js'

/** The overridable handlers of a viewset, by name. */
const overridableHandlers = [
  'list',
  'getElement',
  'createElement',
  'createElements',
  'updateElement',
  'deleteElement',
] as const
export type OverridableName = (typeof overridableHandlers)[number]
/** The handlers and hooks a viewset may override. */
export type OverriddenName = OverridableName | 'scope' | 'beforeWrite' | 'afterWrite' | 'fieldAccess'

/**
 * The viewset's public handlers, as the routes may call them. Method syntax on purpose: an override may
 * narrow its request type (`ListRequest<{ limit: number, offset: number }>`).
 */
export interface ViewsetHandlers {
  list(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): unknown
  getElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): unknown
  createElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): unknown
  createElements(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): unknown
  updateElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null, partial: boolean): unknown
  deleteElement(request: FastifyRequest, reply: FastifyReply, token: ViewsetToken | null): unknown
}

/** A viewset's members that mounting compares with the base class's, to tell its overrides. */
type Overridable = ViewsetHandlers & {
  readonly scope: unknown; readonly beforeWrite: unknown; readonly afterWrite: unknown; readonly fieldAccess: unknown
}

/**
 * The handlers and hooks `viewset` overrides (its members that are not `base`'s); `scope` and `beforeWrite`
 * also when given as options.
 *
 * @example
 * ```ts
 * overriddenMembers(this, Viewset.prototype, this.options) // Set { 'list', 'scope' }
 * ```
 */
export function overriddenMembers (
  viewset: Overridable,
  base: Overridable,
  options: {
    readonly scope?: unknown;
    readonly beforeWrite?: unknown
    readonly afterWrite?: unknown;
    readonly fieldAccess?: unknown
  }
): Set<OverriddenName> {
  const overridden = new Set<OverriddenName>(
    overridableHandlers.filter((name) => viewset[name] !== base[name])
  )
  if (viewset.scope !== base.scope || options.scope !== undefined) overridden.add('scope')
  if (viewset.beforeWrite !== base.beforeWrite || options.beforeWrite !== undefined) overridden.add('beforeWrite')
  if (viewset.fieldAccess !== base.fieldAccess || options.fieldAccess !== undefined) overridden.add('fieldAccess')
  if (viewset.afterWrite !== base.afterWrite || options.afterWrite !== undefined) overridden.add('afterWrite')
  return overridden
}

/**
 * What the routes call: the default handler of each method, or the viewset's override of it. An override
 * is awaited (it may answer at once, or nothing): the route then always gets a promise from it. It runs serving its
 * request, so that the helpers it calls apply that request's rule (execution/served-request.ts).
 */
export function overrideHandlers (
  defaults: DefaultHandlers,
  viewset: { readonly overridden: ReadonlySet<string>; readonly handlers: ViewsetHandlers }
): RouteHandlers {
  const { overridden, handlers } = viewset
  const own = (name: OverridableName) => overridden.has(name)
  // The bulk writes are not overridable: each applies the rules, hooks and bounds of its method itself.
  const bulk = new BulkWriteHandlers(defaults)
  return {
    updateMany: async (request, _reply, token, represent) => await bulk.updateMany(request, token, represent),
    deleteMany: async (request, _reply, token, represent) => await bulk.deleteMany(request, token, represent),
    updateElements: async (request, _reply, token) => await bulk.updateElements(request, token),
    list: own('list')
      ? async (request, reply, token) => ({ rows: await serving(request, () => handlers.list(request, reply, token)) })
      : (request, _reply, token) => defaults.list(request, token),
    getElement: own('getElement')
      ? async (request, reply, token) => await serving(request, () => handlers.getElement(request, reply, token))
      : (request, _reply, token, selection) => defaults.getElement(request, token, selection),
    createElement: own('createElement')
      ? async (request, reply, token) => await serving(request, () => handlers.createElement(request, reply, token))
      : (request, reply, token) => defaults.createElement(request, reply, token),
    createElements: own('createElements')
      ? async (request, reply, token) => await serving(request, () => handlers.createElements(request, reply, token))
      : async (request, reply, token) => await defaults.createElements(request, reply, token),
    updateElement: own('updateElement')
      ? async (request, reply, token, partial) =>
        await serving(request, () => handlers.updateElement(request, reply, token, partial))
      : (request, _reply, token, partial, precondition) =>
          defaults.updateElement(request, token, partial, precondition),
    deleteElement: own('deleteElement')
      ? async (request, reply, token) => await serving(request, () => handlers.deleteElement(request, reply, token))
      : (request, _reply, token, precondition) => defaults.deleteElement(request, token, precondition),
  }
}
