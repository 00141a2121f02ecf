import type { ViewsetDialect } from '../dialect/dialect.js'
import type { OrderKey, Ordering } from './ordering.js'
import { sortsNullsApart } from './ordering.js'
import type { PathRules } from './related-paths.js'
import { pathRules, relatedValue, rulesShape } from './related-paths.js'
import { childCount } from './child-counts.js'

// An ordering through relation paths under a request's row rules: each path's value read only from the related
// rows its tables' rules admit, and what those rules add to a page statement's shape and values.

/**
 * `ordering` under the row rules of a request: each relation path's value read only from related rows the rules
 * admit (a hidden row sorts as NULL), its shape unchanged (a cursor names the same order), the keys' `ruled` the
 * rules' shapes and values. The same ordering when no path has a rule for the request.
 */
export function ruledOrdering (ordering: Ordering, rules: PathRules | undefined): Ordering {
  if (rules === undefined || !ordering.keys.some((key) => key.related !== undefined)) return ordering
  let changed = false
  const keys = ordering.keys.map((key): OrderKey => {
    if (key.related === undefined) return key
    const ruled = pathRules(key.related.path, rules)
    if (ruled.every((hop) => hop.length === 0)) return key
    changed = true
    // relatedValue nests the innermost relation's subquery first: its rules bind first.
    const parameters = [...ruled].reverse().flatMap((hop) => hop.flatMap((rule) => rule.parameters))
    const shape = ruled.map((hop) => rulesShape(hop)).join(':')
    const { path, table, count } = key.related
    const [link] = path.hops
    const expression = count === true && link !== undefined
      ? childCount(link, table, ruled[0])
      : relatedValue(path, table, ruled)
    return { ...key, expression, ruled: { shape, parameters } }
  })
  return changed ? { shape: ordering.shape, keys } : ordering
}

/**
 * What a page statement ordered by `ordering` adds to its shape and values: its shape with its rules' shapes
 * ({@link orderRulesShape}), the values its select list binds when it selects the related sort values (`selected`,
 * bound first) and those its ORDER BY binds (`ordered`, after the WHERE terms).
 */
export function orderBinding (
  ordering: Ordering,
  dialect: Pick<ViewsetDialect, 'capabilities'>
): { shape: string; selected: unknown[]; ordered: unknown[] } {
  const selected = ordering.keys.flatMap((key) => (key.expression === undefined ? [] : (key.ruled?.parameters ?? [])))
  return {
    shape: `${ordering.shape}${orderRulesShape(ordering.keys)}`,
    selected,
    ordered: orderParameters(ordering.keys, dialect),
  }
}

/** The rules' part of the shape of a statement ordered by `keys` ('' when none applies). */
export function orderRulesShape (keys: readonly OrderKey[]): string {
  let shape = ''
  keys.forEach((key, index) => {
    if (key.ruled !== undefined) shape += `|${index}:${key.ruled.shape}`
  })
  return shape
}

/** The values `keys` bind in ORDER BY ({@link orderTerms}): each ruled key's, as often as its value is written. */
export function orderParameters (keys: readonly OrderKey[], dialect: Pick<ViewsetDialect, 'capabilities'>): unknown[] {
  const parameters: unknown[] = []
  for (const key of keys) {
    if (key.ruled === undefined) continue
    if (sortsNullsApart(key, dialect)) parameters.push(...key.ruled.parameters)
    parameters.push(...key.ruled.parameters)
  }
  return parameters
}
