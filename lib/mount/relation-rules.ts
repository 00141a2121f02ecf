import { invalidOption } from '../errors.js'
import type { FieldRules } from '../query/field-access.js'
import type { RelationRule } from '../relations/config.js'
import type { RelationRuleSlot } from '../relations/relation-rule.js'
import type { RegisteredViewset } from './registry.js'
import { liveRuleOf } from './soft-delete-check.js'

// Where the row rule of each table a viewset's relations read comes from, decided once every viewset of the
// application has registered (the registry's ready work), so that a request never looks one up.
//
// "The same database" is the same Kysely instance (the viewsets' `db` option): two instances over one
// database cannot be told apart from the outside, so a viewset on another instance is named with `rulesFrom`.

/** A table's rules as a slot takes them: the row rule, and the field rule of the viewset that serves it. */
interface Rules {
  readonly rule: RelationRule<unknown> | undefined
  readonly fields?: FieldRules | undefined
}

/** The rule `rulesFrom` names: a viewset's full prefix serving the slot's table, or a rule object as it is. */
function named (slot: RelationRuleSlot, entries: readonly RegisteredViewset[]): Rules {
  const { rulesFrom } = slot
  // A soft-deleting viewset named as the object stands for its rule AND "the row lives" (mount/soft-delete-check.ts).
  if (typeof rulesFrom !== 'string') return { rule: liveRuleOf(rulesFrom) }
  const entry = entries.find((candidate) => candidate.prefix === rulesFrom)
  if (entry === undefined) {
    const prefixes = entries.map(({ prefix }) => prefix).join(', ')
    invalidOption(`${slot.path}.rulesFrom`, `no viewset of the app is mounted at "${rulesFrom}" (mounted: ${prefixes})`)
  }
  if (entry.table !== slot.table) {
    invalidOption(
      `${slot.path}.rulesFrom`,
      `the viewset at "${rulesFrom}" serves "${entry.table}", not "${slot.table}"`
    )
  }
  return { rule: entry.rule?.source, fields: entry.fields }
}

/** The rule of the one viewset serving the slot's table over `db`; several with different rules are refused. */
function served (slot: RelationRuleSlot, entries: readonly RegisteredViewset[], db: object): Rules {
  const serving = entries.filter((entry) => entry.db === db && entry.table === slot.table)
  const [first, ...others] = serving
  if (first === undefined) return { rule: undefined }
  const differs = (entry: RegisteredViewset) =>
    entry.rule?.identity !== first.rule?.identity ||
    entry.fields?.identity !== first.fields?.identity
  if (others.some(differs)) {
    const prefixes = serving.map(({ prefix }) => `"${prefix}"`).join(', ')
    invalidOption(
      slot.path,
      `table "${slot.table}" is served by viewsets with different row or field rules (${prefixes}): choose the one ` +
        `whose rule applies with rulesFrom (the viewset, or its prefix such as ${prefixes.split(', ')[0] ?? ''})` +
        (slot.path.startsWith('the foreign key') ? ', on a selectRelated relation declared over the key' : '')
    )
  }
  return { rule: first.rule?.source, fields: first.fields }
}

/**
 * Resolves each slot's rule: its `rulesFrom` when declared, else the one viewset of the app serving its table
 * over `db`, else none. Throws an `InvalidOption` naming the relation (which fails `ready()`).
 *
 * @example
 * ```ts
 * whenAllRegistered(fastify, (entries) => { resolveRelationRules(entries, db, loader.ruleSlots) })
 * ```
 */
export function resolveRelationRules (
  entries: readonly RegisteredViewset[],
  db: object,
  slots: readonly RelationRuleSlot[]
): void {
  for (const slot of slots) {
    const { rule, fields } = slot.rulesFrom === undefined ? served(slot, entries, db) : named(slot, entries)
    slot.resolve(rule, fields)
  }
}
