import { expressionBuilder, sql } from 'kysely'
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely'
import { invalidOption } from '../errors.js'
import type { FilterOperator } from '../methods.js'
import type { RelationLink } from '../relations/relation-link.js'
import type { Row } from '../sql.js'
import type { Operand } from './condition.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'
import type { PathRules, RelatedPath, RelatedRoot } from './related-paths.js'
import { aliasAt, joinAt, linkRules, rulesShape } from './related-paths.js'
import type { ScopeCondition } from './scope.js'

// Counts of to-many relations as values LIST filters and sorts on (issue 37 item 7): `books.count` is the number of
// an author's books, computed in the page's statement by a correlated subquery that sees only the related rows the
// caller's rules admit (the related table's `'LIST'` rule, and a many-to-many join table's), as a relation filter's
// EXISTS does.

/** The value of a count: an integer, never NULL (a parent with no related row counts 0). */
const countField: ScalarField = Object.freeze({
  name: 'count', type: 'integer', schema: { type: 'integer' }, nullable: false,
})

/** The operators a count takes: comparisons and lists of numbers (a count is never NULL, and no text). */
const countOperatorNames: readonly FilterOperator[] = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin']

/** A `<relation>.count` name, read: the to-many relation it counts, as a one-hop path to an integer value. */
export interface CountPath {
  readonly link: RelationLink
  readonly field: ScalarField
  readonly path: RelatedPath
}

/** Stateless, so one builds every count's subquery. */
const eb: ExpressionBuilder<Record<string, Row>, string> = expressionBuilder<Record<string, Row>, string>()

/** `a = b` of two checked column references. */
function equal (left: string, right: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(left)} = ${sql.ref(right)}`
}

/**
 * Reads `name` of `option` as a count (`books.count`: a `prefetchRelated` relation of the viewset's own, then
 * `count`), or `undefined` when it is none (a plain field or relation path, read as before; also when the related rows
 * have a field named `count`, which the name keeps meaning). A count of a to-one relation, or through another
 * relation, fails with `FST_VIEWSET_INVALID_OPTION` naming it.
 */
export function countPath (option: string, name: string, root: RelatedRoot | undefined): CountPath | undefined {
  if (root === undefined || !name.endsWith('.count')) return undefined
  const relation = name.slice(0, -'.count'.length)
  const [first = '', ...rest] = relation.split('.')
  let link = root.links.get(first)
  for (const part of rest) link = link?.links.get(part)
  if (link === undefined || link.columns.includes('count')) return undefined
  if (rest.length > 0) {
    invalidOption(option, `"${name}": a count is of one of this viewset's own to-many relations ` +
      `(${nameList([...root.links.values()].filter(isToMany).map((entry) => `${entry.field}.count`))}), ` +
      'not through another relation')
  }
  if (!isToMany(link)) {
    invalidOption(option, `"${name}": "${relation}" is a selectRelated (to-one) relation; a count is of a ` +
      'prefetchRelated (to-many) relation')
  }
  return { link, field: countField, path: { path: name, hops: [link], field: countField } }
}

function isToMany (link: RelationLink): boolean {
  return link.kind !== 'many-to-one'
}

/** Checks the operators of a count in `filterFields`: numeric ones only (`isnull` and substrings mean nothing). */
export function countOperators (name: string, operators: unknown): void {
  if (!Array.isArray(operators)) return // the plain check names what is wrong
  for (const op of operators) {
    if (!countOperatorNames.some((allowed) => allowed === op)) {
      invalidOption('filterFields', `"${name}": operator ${JSON.stringify(op)} does not apply to a count ` +
        `(operators: ${countOperatorNames.join(', ')})`)
    }
  }
}

/**
 * The number of `link`'s rows of each parent row of `table`, admitted by `ruled` (the relation's rules for a request,
 * {@link linkRules}: the join table's, then the related table's, binding in that order): a correlated subquery
 * (`(select count(*) from books as viewset_r1 where viewset_r1.author_id = authors.id)`), which an index of the child
 * table starting with its foreign key (of the join table, with its key of the parent) serves.
 */
export function childCount (
  link: RelationLink,
  table: string,
  ruled: readonly ScopeCondition[] = []
): Expression<unknown> {
  const alias = aliasAt(1)
  const { through } = link
  let query
  if (through === undefined) {
    query = eb
      .selectFrom(`${link.table} as ${alias}`)
      .where(equal(`${alias}.${link.targetColumn}`, `${table}.${link.parentColumn}`))
  } else {
    const join = joinAt(1)
    query = eb
      .selectFrom(`${through.table} as ${join}`)
      .innerJoin(`${link.table} as ${alias}`, (on) =>
        on.on(equal(`${alias}.${link.targetColumn}`, `${join}.${through.targetKey}`))
      )
      .where(equal(`${join}.${through.sourceKey}`, `${table}.${link.parentColumn}`))
  }
  for (const rule of ruled) query = query.where(rule.where)
  return query.select((inner) => inner.fn.countAll().as('count'))
}

/**
 * A count as a filter's operand: the subquery under the request's rules, its shape naming the rules' (values apart)
 * and its values the rules', bound before the filter's value.
 */
export function countOperand (link: RelationLink, table: string): (rules?: PathRules) => Operand {
  const open = childCount(link, table)
  const bare: Operand = { shape: '', parameters: [], value: () => open }
  return (rules) => {
    const ruled = linkRules(link, 1, rules)
    if (ruled.length === 0) return bare
    const value = childCount(link, table, ruled)
    return {
      shape: `[${rulesShape(ruled)}]`,
      parameters: ruled.flatMap((rule) => rule.parameters),
      value: () => value,
    }
  }
}
