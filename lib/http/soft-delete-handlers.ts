import type { FastifyRequest } from 'fastify'
import { ambientDatabase } from '../data/ambient-transaction.js'
import type { AfterRow } from '../data/gateway-results.js'
import type { Precondition } from '../data/precondition.js'
import { restoreRow } from '../data/soft-delete.js'
import { andThen } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import type { AfterWriteMethod, ViewsetToken } from '../options.js'
import type { SoftDeletePlan } from '../query/soft-delete-term.js'
import { isRecord } from '../schema/object-schema.js'
import type { Row } from '../sql.js'
import type { DefaultHandlerContext } from './default-handler-context.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { SoftDeleteRouting } from './route-context.js'

// The handlers of soft delete's two routes (issue 39, item 2): RESTORE (`POST {prefix}/:id/restore`) marks a row live
// again under the rule of RESTORE AND PATCH, the row restored checked against PATCH's; PURGE (`DELETE
// {prefix}/:id/purge`) removes a row, deleted or not, under the rule of PURGE AND DELETE. Both take If-Match and run
// afterWrite in the write's transaction. Like the bulk writes, they are not overridable.

/** The `:id` of an element route: its params schema requires it. */
function idOf (request: FastifyRequest): unknown {
  return isRecord(request.params) ? request.params.id : undefined
}

/** RESTORE and PURGE over a mounted viewset's default handlers' context. */
export class SoftDeleteHandlers implements SoftDeleteRouting {
  readonly plan: SoftDeletePlan
  readonly #context: DefaultHandlerContext

  constructor (defaults: DefaultHandlers, plan: SoftDeletePlan) {
    this.#context = defaults.context
    this.plan = plan
  }

  /** The viewset's `afterWrite` for the row this request writes with `method`, or `undefined` without one. */
  #afterRow (request: FastifyRequest, token: ViewsetToken | null, method: AfterWriteMethod): AfterRow | undefined {
    const { afterWrite } = this.#context
    if (afterWrite === undefined) return undefined
    return async (trx, before, after) => { await afterWrite(trx, { request, token, method }, { before, after }) }
  }

  /**
   * RESTORE: marks the row live again if `precondition` holds (a row that lives already is answered the same), and
   * answers it as stored; a 404 when no row is in the rule of RESTORE AND PATCH, a 403 when the row restored is
   * outside PATCH's rule (nothing changes).
   */
  restore (request: FastifyRequest, token: ViewsetToken | null, precondition?: Precondition): Eventually<Row> {
    const id = idOf(request)
    const rules = {
      scope: this.#context.scopeOf(request, token, 'RESTORE'),
      check: this.#context.scopeOf(request, token, 'PATCH'),
    }
    const db = ambientDatabase(this.#context.db, request)
    const after = this.#afterRow(request, token, 'RESTORE')
    return andThen(restoreRow(this.#context.resource, db, id, this.plan, rules, precondition, after), (row) =>
      row ?? this.#context.notFound(id))
  }

  /** PURGE: removes the row for good, deleted or not, if `precondition` holds; a 404 when none is in the rule. */
  purge (request: FastifyRequest, token: ViewsetToken | null, precondition?: Precondition): Eventually<void> {
    const id = idOf(request)
    const scope = this.#context.scopeOf(request, token, 'PURGE')
    const db = ambientDatabase(this.#context.db, request)
    const after = this.#afterRow(request, token, 'PURGE')
    return andThen(this.#context.resource.delete(db, id, scope, precondition, after), (deleted) => {
      if (!deleted) this.#context.notFound(id)
    })
  }
}
