import type { FastifyRequest } from 'fastify'
import type { MatchedChange } from '../data/version-match.js'
import { withCancellation } from '../execution/cancellation.js'
import type { RelationRuleSlot, RuleRequest } from '../relations/relation-rule.js'
import type { AnyDatabase, Row } from '../sql.js'

// The relation fields of a stream's events (issue 40): when the LIST request that opened the stream names relations
// (`?fields=` with relation fields, or `defaultRelations`, or every relation when neither narrows them), its events
// carry them as LIST would, loaded once per change batch for its group of streams, with the related tables' row and
// field rules of the stream's caller. Streams share a group (and so the loaded rows) only when those rules give them
// the same statements and hide the same fields: the key below is part of the group's.

/** How a stream's events get their relation fields. */
export interface EventRelations {
  /** Equal for two streams exactly when their loads read the same related rows and hide the same fields. */
  readonly key: string
  /** Adds the relation fields to the rows of `changes`, in place (rows of one group's batch, not shared). */
  readonly load: (changes: readonly MatchedChange[]) => Promise<void>
}

/** Where the relations of a viewset's rows are loaded from: its gateway's loader and the slots of their rules. */
export interface RelationSource {
  readonly db: AnyDatabase
  readonly hasRelations: boolean
  /** Every relation field (what a request that names none loads, without `defaultRelations`). */
  readonly fields: ReadonlySet<string>
  /** The row rules of every table the relations read, at every level (RelationLoader.ruleSlots). */
  readonly slots: readonly RelationRuleSlot[]
  load(db: AnyDatabase, rows: Row[], only: ReadonlySet<string> | undefined, request: RuleRequest): Promise<void>
}

/** A rule's values in a key: bigints as their digits, told apart from strings. */
function keyText (value: unknown): string {
  return JSON.stringify(value, (_key, part: unknown) => (typeof part === 'bigint' ? `${part}n` : part))
}

/**
 * The relation fields a stream's events carry, or `undefined` when they carry none (the viewset has no relations, or
 * the request's `?fields=` names none). The related tables' rules are evaluated here, once per stream, with the
 * stream's request, as they would be for its LIST; a rule's error is the stream's (thrown before its headers).
 *
 * @example
 * ```ts
 * const relations = await eventRelations(source, request, query.fields?.relations ?? defaultRelations)
 * const group = relations === undefined ? groupKey(conditions) : `${groupKey(conditions)}\u0001${relations.key}`
 * ```
 */
export async function eventRelations (
  source: RelationSource,
  request: FastifyRequest,
  only: ReadonlySet<string> | undefined
): Promise<EventRelations | undefined> {
  if (!source.hasRelations || only?.size === 0) return undefined
  const { db } = source
  const rules: RuleRequest = { request, token: request.viewsetToken }
  const parts: unknown[] = []
  for (const slot of source.slots) {
    const condition = slot.condition(db, rules)
    const view = slot.fieldView(rules)
    const hidden = view === undefined ? null : [...(await view).hidden].sort()
    parts.push([slot.path, condition?.shape ?? null, condition?.parameters ?? null, hidden])
  }
  // Named or implied alike: `?fields=` naming every relation loads what naming none does.
  const key = keyText([[...(only ?? source.fields)].sort(), parts])
  return {
    key,
    load: async (changes) => {
      const rows = changes.flatMap((change) => (change.row === undefined ? [] : [change.row]))
      if (rows.length === 0) return
      // One load serves every stream of the group: it belongs to no request that a client's leaving would cancel.
      await withCancellation(undefined, () => source.load(db, rows, only, rules))
    },
  }
}
