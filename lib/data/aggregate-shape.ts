import type { Condition } from '../query/condition.js'
import type { AggregateQuery, RequestedGroup } from '../query/aggregate-query.js'
import type { PathRules } from '../query/related-paths.js'
import { pathRules, rulesShape } from '../query/related-paths.js'
import type { ScopeCondition } from '../query/scope.js'
import { parametersOf, shapeOf } from './condition-shape.js'

// The cache key and the values of an AGGREGATE statement (aggregate-statement.ts), so that it is compiled once per
// shape as LIST's are: which groups, metrics, order, WHERE terms (the scope's and the rules' SQL included, never their
// values), page kind and LIMIT. The values are predicted in the order the SQL binds them; StatementCache keeps a
// statement only when Kysely bound exactly these, so a wrong prediction costs a compile, never a wrong answer.

/** What a page of groups adds to the query's shape: its WHERE terms, keyset and LIMIT. */
export interface GroupsPage {
  readonly where: readonly Condition[]
  readonly keyset: Condition | undefined
  /** Whether the LIMIT is written into the SQL (DialectSyntax.literalLimit) rather than bound. */
  readonly literalLimit: boolean
  /** The LIMIT: the page's size, one more by cursor. */
  readonly size: number
  readonly byCursor: boolean
  /** A page before the cursor: read in the reversed order. */
  readonly backwards: boolean
  /** The request's relation rules, which a group key through a relation applies. */
  readonly rules: PathRules | undefined
}

/** The values a relation path's value binds: its rules', innermost hop first (related-paths.ts, relatedValue). */
function pathValues (ruled: readonly (readonly ScopeCondition[])[], into: unknown[]): string {
  let shape = ''
  for (let depth = ruled.length; depth >= 1; depth--) {
    const rules = ruled[depth - 1] ?? []
    shape += `${depth}:${rulesShape(rules)};`
    for (const rule of rules) for (const value of rule.parameters) into.push(value)
  }
  return shape
}

/** A group key's shape, and the values its columns bind: its path's value, then each hop's presence. */
function groupShape (group: RequestedGroup, rules: PathRules | undefined, into: unknown[]): string {
  const { path } = group
  if (path === undefined) return group.name
  const ruled = pathRules(path, rules)
  let shape = `${group.name}(${pathValues(ruled, into)}`
  // Each hop's presence is the value of the path cut after it, under the rules of the hops it keeps.
  for (let depth = 1; depth <= path.hops.length; depth++) shape += `/${pathValues(ruled.slice(0, depth), into)}`
  return `${shape})`
}

/**
 * The cache key of an AGGREGATE statement and the values it binds, in order: the group keys' (relation rules),
 * the WHERE terms', the keyset's, then the LIMIT (unless written into the SQL) and the OFFSET (by offset).
 *
 * @example
 * ```ts
 * const page = { where, keyset, literalLimit: true, size: 20, byCursor: false, backwards: false, rules }
 * const { shape, parameters } = groupsShape(query, page)
 * ```
 */
export function groupsShape (query: AggregateQuery, page: GroupsPage): { shape: string; parameters: unknown[] } {
  const parameters: unknown[] = []
  let groups = ''
  for (const group of query.groups) groups += `${groupShape(group, page.rules, parameters)},`
  let metrics = ''
  for (const metric of query.metrics) metrics += `${metric.fn}.${metric.name}${metric.text ? ':text' : ''},`
  for (const value of parametersOf(page.where)) parameters.push(value)
  if (page.keyset !== undefined) for (const value of page.keyset.parameters) parameters.push(value)
  if (!page.literalLimit) parameters.push(page.size)
  if (!page.byCursor) parameters.push(query.offset)
  const limit = page.literalLimit ? String(page.size) : '?'
  const shape = `${groups}|${metrics}|${query.ordering.shape}|${shapeOf(page.where)}|` +
    `${page.keyset?.shape ?? ''}|${page.byCursor ? 'cursor' : 'offset'}${page.backwards ? ':before' : ''}|${limit}`
  return { shape, parameters }
}
