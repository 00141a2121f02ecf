import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  inAmbientTransaction, inAmbientTransactionAlready, inAmbientTransactionNow, inJoinedTransaction,
} from '../data/ambient-transaction.js'
import { andThen, inOrder, onFault } from '../execution/eventually.js'
import type { Eventually } from '../execution/eventually.js'
import { runSynchronously, transactsAtOnce } from '../execution/sync-transaction.js'
import type { ViewsetToken } from '../options.js'
import { isRecord } from '../schema/object-schema.js'
import type { AnyDatabase, Row } from '../sql.js'
import { childBody } from './child-preparation.js'
import type { ChildPreparation, PreparedChild } from './child-preparation.js'
import { pointed } from './child-errors.js'
import { createsAtOnce } from './creates-at-once.js'
import type { DefaultHandlers } from './default-handlers.js'
import type { NestedTarget, WritableRelation } from './writable-relation.js'

// A nested POST that only creates (a new parent, new children of its one-to-many relations) is written in two steps
// on SQLite: first, outside any transaction, what may await (each child's authorization, field view and validation,
// none of which reads the transaction), then every write at once, in one synchronous transaction
// (execution/sync-transaction.ts) where each write is known before it starts to await nothing (creates-at-once.ts):
// no promise between BEGIN and COMMIT, each statement prepared once (benchmarks/analysis.md, issue 43).
// A child's preparation that fails is answered at the point its write would have been, after the parent's and the
// earlier children's writes, so the errors come in the order of the one-step write.

/** A relation whose child viewset is known (once the application is ready). */
export type TargetedRelation = WritableRelation & { readonly target: NestedTarget }

/** Whether the relation's child viewset is known. */
export function hasTarget (relation: WritableRelation): relation is TargetedRelation {
  return relation.target !== undefined
}

/** A child prepared to write: its request, token and body (its parent's key aside). */
export type ReadyChild = PreparedChild & { readonly body: Row }

/** The children of one relation as prepared, in order; the last may be the error its preparation threw. */
export interface PreparedRelation {
  readonly relation: TargetedRelation
  readonly children: ReadonlyArray<ReadyChild | { readonly error: unknown }>
}

/** A writable relation field a body sends, with its value. */
interface SentRelation { readonly relation: WritableRelation, readonly value: unknown }

/**
 * Creates one child through its viewset's default createElement, in the nested write's transaction (which its
 * request joins meanwhile), with its parent's key: the row created.
 *
 * @example
 * ```ts
 * const row = await childWrite(request, reply, relation, { child, token, view, body }, author.id)
 * ```
 */
export function childWrite (request: FastifyRequest, reply: FastifyReply, relation: TargetedRelation,
  { child, token, body }: ReadyChild, parent: unknown): Eventually<Row> {
  child.body = { ...body, [relation.foreignKey]: parent }
  // The child's handler finds the nested write's transaction by its request (data/ambient-transaction.ts).
  return inJoinedTransaction(child, request, () => relation.target.defaults.createElement(child, reply, token))
}

/**
 * Whether a nested POST may be written in two steps: on a database with synchronous transactions, outside any nested
 * write, the parent created by its default handler at once (`parent`: its viewset's defaults, when its createElement
 * is theirs and no afterWrite of its own runs), every relation sent a one-to-many, every child a creation.
 *
 * @example
 * ```ts
 * if (splitsCreation(db, request, token, sent, defaults)) return await writeCreation(...)
 * ```
 */
export function splitsCreation (db: AnyDatabase, request: FastifyRequest, token: ViewsetToken | null,
  sent: readonly SentRelation[], parent: DefaultHandlers | undefined): boolean {
  if (parent === undefined || !transactsAtOnce(db) || inAmbientTransactionAlready(request)) return false
  const children = sent.every(({ relation, value }) => relation.kind === 'one-to-many' && hasTarget(relation) &&
    Array.isArray(value) && value.every((element) => isRecord(element) && element[relation.targetKey] === undefined))
  return children && createsAtOnce(parent, request, token, parent.writable(request.body))
}

/**
 * Step one: each child's preparation (ChildPreparation), relation by relation, in order, until one fails (its error
 * kept, in its place); at once where none awaits.
 *
 * @example
 * ```ts
 * const prepared = await prepareCreation(preparation, request, reply, sent)
 * ```
 */
export function prepareCreation (preparation: ChildPreparation, request: FastifyRequest, reply: FastifyReply,
  sent: readonly SentRelation[]): Eventually<PreparedRelation[]> {
  let failed = false
  const prepareOne = (relation: TargetedRelation, element: unknown) => {
    if (failed || !isRecord(element)) return undefined // none is not a record (splitsCreation)
    return onFault(() => andThen(preparation.prepare(request, reply, relation, element, undefined),
      (ready) => ({ ...ready, body: childBody(ready.view, relation, element) })), (error) => {
      failed = true
      return { error }
    })
  }
  const relations = sent.flatMap(({ relation, value }) =>
    hasTarget(relation) && Array.isArray(value) ? [{ relation, value }] : [])
  return inOrder(relations, ({ relation, value }) => andThen(inOrder(value, (element) => prepareOne(relation, element)),
    (children) => ({ relation, children: children.filter((child) => child !== undefined) })))
}

/**
 * Step two: the parent's write (`parent`), then each relation's children created in order, `answer` told each
 * relation's rows created, in one transaction of `db`: synchronous where every child's write is known to run at once
 * and `db` opens one now (answered at once), else Kysely's. The parent's row (what `parent` answered, when not a row).
 *
 * @example
 * ```ts
 * return writeCreation(db, request, reply, prepared, () => defaults.createElement(request, reply, token), answer)
 * ```
 */
export function writeCreation (db: AnyDatabase, request: FastifyRequest, reply: FastifyReply,
  prepared: readonly PreparedRelation[], parent: () => Eventually<unknown>,
  answer: (row: Row, relation: TargetedRelation, created: Row[]) => void): Eventually<unknown> {
  const work = () => andThen(parent(), (row) => !isRecord(row)
    ? row
    : andThen(inOrder(prepared, ({ relation, children }) => andThen(
      inOrder(children, (child, index) => {
        const pointer = `/${relation.field}/${index}`
        if ('error' in child) throw pointed(child.error, pointer)
        return onFault(() => childWrite(request, reply, relation, child, row[relation.parentKey]), (error) => {
          throw pointed(error, pointer)
        })
      }),
      (created) => { answer(row, relation, created) })), () => row))
  const atOnce = prepared.every(({ relation, children }) => children.every((child) => 'error' in child ||
    createsAtOnce(relation.target.defaults, child.child, child.token, { ...child.body, [relation.foreignKey]: 0 })))
  const done = atOnce ? runSynchronously(db, (trx) => inAmbientTransactionNow(db, request, trx, work)) : undefined
  if (done !== undefined) return done.value
  return inAmbientTransaction(db, request, async () => await work())
}
