import { documenting, escapePattern, termValuePattern } from './list-patterns.js'

// derive.ts's JsonSchema, restated (as list-patterns.ts does).
type JsonSchema = Record<string, unknown>

/** One filter parameter, as a group term may name it. */
export interface GroupTerm {
  /** The filter parameter: `price__lt`, `author.name__contains`, `name` (eq). */
  readonly parameter: string
  readonly operator: string
  /** The field's schema: what a value (or a list element) must match. */
  readonly field: JsonSchema
}

/** What the four group parameters' documents say of their grammar and bounds. */
export interface GroupBounds {
  readonly maxTerms: number
  readonly maxDepth: number
  readonly maxLength: number
  readonly maxSearchLength: number
  readonly maxInValues: number
}

/**
 * The pattern of one term's value (after its `name.`), or `undefined` when no pattern says which of its values the
 * server takes: the document then lists fewer terms than the server reads, never more.
 */
function valuePattern (term: GroupTerm, bounds: GroupBounds): string | undefined {
  switch (term.operator) {
    case 'isnull':
      return '(?:true|false)'
    case 'contains':
    case 'startswith':
    case 'endswith':
      return `[^,()"\\\\\\x00]{0,${Math.min(bounds.maxSearchLength, 40)}}`
    case 'in':
    case 'nin': {
      const element = termValuePattern(term.field, false)
      return element === undefined ? undefined : `\\(${element}(?:,${element}){0,3}\\)`
    }
    default:
      return termValuePattern(term.field, !['eq', 'ne'].includes(term.operator))
  }
}

/** Every term as one pattern group: names that share a value pattern are written once with it (a short document). */
function termsPattern (terms: readonly GroupTerm[], bounds: GroupBounds): string {
  const byValue = new Map<string, string[]>()
  for (const term of terms) {
    const value = valuePattern(term, bounds)
    if (value === undefined) continue
    byValue.set(value, [...(byValue.get(value) ?? []), term.parameter])
  }
  if (byValue.size === 0) return '(?!)'
  const alternatives = [...byValue].map(([value, names]) => {
    const sorted = [...names].sort((a, b) => b.length - a.length).map(escapePattern)
    return `(?:${sorted.join('|')})\\.${value}`
  })
  return `(?:not\\.)?(?:${alternatives.join('|')})`
}

/**
 * The `or`, `and`, `not.or` and `not.and` query parameters over these filter parameters. A value is one group,
 * or several (repeated keys, ANDed). The pattern admits terms whose values it can describe exactly, at most four
 * terms per group and two levels, and five repeated keys of one term each: whatever a tool generates from it
 * stays within the bounds, which the description states (the parser checks the full grammar itself).
 */
export function groupSchema (terms: readonly GroupTerm[], bounds: GroupBounds): Record<string, JsonSchema> {
  if (terms.length === 0) return {}
  const term = termsPattern(terms, bounds)
  const nested = `(?:not\\.)?(?:and|or)\\(${term}(?:,${term})?\\)`
  const item = `(?:${term}|${nested})`
  const group = documenting(`^\\(${item}(?:,${item})?\\)$`)
  const single = documenting(`^\\(${term}\\)$`)
  const names = terms.map((entry) => entry.parameter).join(', ')
  const grammar =
    'comma-separated terms `filter.value` in parentheses, such as `(price__lt.5,name__contains.bread)`, where ' +
    '`filter` is a filter parameter of this list (`field` for eq, `field__op`, relation paths included) and a ' +
    'term is validated as that filter is; `not.` negates a term or a group (SQL: a comparison with NULL never ' +
    'matches, negated or not); groups nest as `or(…)` and `and(…)`; a value holding `,`, `(`, `)` or `"` is ' +
    'written in double quotes with `\\` escapes; `in`/`nin` take a list, `price__in.(1,2,3)`. Bounds: at most ' +
    `${bounds.maxTerms} terms across the request's groups, ${bounds.maxDepth} levels (the top-level group is 1), ` +
    `${bounds.maxLength} characters per group, no empty group; a relation term holds for one related row (NOT ` +
    'EXISTS when negated) and terms on one relation path inside `and(…)` hold for the same row. Repeat the key ' +
    `for several groups (ANDed). Filters: ${names}.`
  const schema = (what: string): JsonSchema => ({
    type: ['string', 'array'],
    minLength: 2,
    maxLength: bounds.maxLength,
    pattern: group,
    items: { type: 'string', minLength: 2, maxLength: bounds.maxLength, pattern: single },
    minItems: 1,
    maxItems: 5,
    description: `${what}: ${grammar}`,
  })
  return {
    or: schema('Rows for which at least one term or group holds'),
    and: schema('Rows for which every term and group holds'),
    'not.or': schema('Rows for which no term or group holds'),
    'not.and': schema('Rows for which not every term and group holds'),
  }
}
