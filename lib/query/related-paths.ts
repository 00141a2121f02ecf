import { sql } from 'kysely'
import type { Expression, SqlBool } from 'kysely'
import { invalidOption } from '../errors.js'
import type { AnyDatabase } from '../sql.js'
import type { RelationLink } from '../relations/relation-link.js'
import type { RuleRequest } from '../relations/relation-rule.js'
import type { AnyExpressionBuilder, Condition } from './condition.js'
import type { ScopeCondition } from './scope.js'
import type { ScalarField } from './field-types.js'
import { nameList, scalarField } from './field-types.js'

/** The most relations a dotted path may go through (`author.publisher.name`): each one is a nested subquery. */
export const maxHops = 2

/** A dotted path through the configured relations to a scalar field of the last one, checked at registration. */
export interface RelatedPath {
  /** As written: `author.name`, `tags.name`, `author.publisher.name`. */
  readonly path: string
  /** The relations it goes through, from the parent's. */
  readonly hops: readonly RelationLink[]
  /** The field of the last relation's schema, typed from that schema. */
  readonly field: ScalarField
}

/** Where a path's relations start: the parent table and its relations. */
export interface RelatedRoot {
  /** The parent table, as LIST selects from it: related subqueries refer to its columns by `table.column`. */
  readonly table: string
  readonly links: ReadonlyMap<string, RelationLink>
}

/** The alias of the related table `depth` hops away (1 is the parent's own relation). */
export function aliasAt (depth: number): string {
  return `viewset_r${depth}`
}

/** The alias of a many-to-many's join table `depth` hops away. */
export function joinAt (depth: number): string {
  return `viewset_j${depth}`
}

/**
 * The request whose row rules a relation path applies (each related table's `'LIST'` rule, as its loads do), and
 * the database its rules are compiled for. Without one (a helper's query outside a request), no rule applies.
 */
export interface PathRules {
  readonly db: AnyDatabase
  readonly request: RuleRequest
}

/**
 * The rules of the relation `depth` hops along a path, as its subquery aliases them, in the order its SQL binds
 * them: the join table's, then the related table's. Empty when neither has a rule for the request.
 */
export function linkRules (link: RelationLink, depth: number, rules: PathRules | undefined): ScopeCondition[] {
  if (rules === undefined) return []
  const { db, request } = rules
  const ruled: ScopeCondition[] = []
  const through = link.rules.through?.condition(db, request, joinAt(depth))
  if (through !== undefined) ruled.push(through)
  const target = link.rules.target.condition(db, request, aliasAt(depth))
  if (target !== undefined) ruled.push(target)
  return ruled
}

/** The rules of every relation of `path`, hop by hop ({@link linkRules}). */
export function pathRules (path: RelatedPath, rules: PathRules | undefined): ScopeCondition[][] {
  return path.hops.map((link, index) => linkRules(link, index + 1, rules))
}

/** The shape of rules (their SQL, values apart): part of a statement's shape, as the rules change its SQL. */
export function rulesShape (ruled: readonly ScopeCondition[]): string {
  let shape = ''
  for (const rule of ruled) shape += rule.shape
  return shape
}

/** The column of the last relation of a path, as the innermost subquery names it. */
export function relatedColumn (path: RelatedPath): string {
  return `${aliasAt(path.hops.length)}.${path.field.name}`
}

/**
 * Reads a dotted path of `option` (filterFields, orderingFields, searchFields) through the configured
 * relations. `toOne`: only many-to-one (`selectRelated`) relations, as ordering and search need one value
 * per parent. A path that goes through something else than a relation, too many relations, or ends on
 * anything but a scalar field of the related schema fails with `FST_VIEWSET_INVALID_OPTION` naming it.
 */
export function resolvePath (option: string, path: string, root: RelatedRoot, toOne: boolean): RelatedPath {
  const parts = path.split('.')
  const name = parts.pop() ?? ''
  if (parts.length > maxHops) {
    invalidOption(option, `"${path}" goes through ${parts.length} relations; at most ${maxHops} are allowed`)
  }
  const hops: RelationLink[] = []
  let links = root.links
  for (const part of parts) {
    const link = links.get(part)
    if (link === undefined) {
      invalidOption(
        option,
        `"${path}": "${part}" is not a configured relation` +
          (hops.length === 0 ? '' : ` of "${hops.map((hop) => hop.field).join('.')}"`) +
          ` (relations: ${nameList(links.keys())})`
      )
    }
    if (toOne && link.kind !== 'many-to-one') {
      invalidOption(
        option,
        `"${path}": "${part}" is a prefetchRelated (to-many) relation; only selectRelated paths are allowed here`
      )
    }
    hops.push(link)
    links = link.links
  }
  const last = hops[hops.length - 1]
  if (last === undefined) return invalidOption(option, `"${path}" names no relation`)
  const properties = last.target.properties
  const property = last.columns.includes(name) && Object.hasOwn(properties, name) ? properties[name] : undefined
  const field = property === undefined ? undefined : scalarField(name, property)
  if (field === undefined) {
    const scalars = last.columns.filter((column) => {
      const schema = properties[column]
      return schema !== undefined && scalarField(column, schema) !== undefined
    })
    invalidOption(
      option,
      `"${path}": "${name}" is not a scalar field of the schema of "${last.field}" (fields: ${nameList(scalars)})`
    )
  }
  return { path, hops, field }
}

/** `a = b` of two checked column references. */
function equal (left: string, right: string): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(left)} = ${sql.ref(right)}`
}

/**
 * `EXISTS` (a related row of `link`, reached from `outer`, admitted by `ruled` (its rules, {@link linkRules}), for
 * which every term holds): "has at least one", which never repeats a parent however many children match. `depth`
 * numbers the aliases of nested relations. The rules bind their values before the terms.
 */
export function relatedExists (
  eb: AnyExpressionBuilder,
  link: RelationLink,
  outer: string,
  depth: number,
  terms: readonly Expression<SqlBool>[],
  ruled: readonly ScopeCondition[] = []
): Expression<SqlBool> {
  const alias = aliasAt(depth)
  const { through } = link
  let query
  if (through === undefined) {
    // many-to-one and one-to-many alike: the related row's column equals the parent's.
    query = eb
      .selectFrom(`${link.table} as ${alias}`)
      .select(sql.lit(1).as('one'))
      .where(equal(`${alias}.${link.targetColumn}`, `${outer}.${link.parentColumn}`))
  } else {
    const join = joinAt(depth)
    query = eb
      .selectFrom(`${through.table} as ${join}`)
      .innerJoin(`${link.table} as ${alias}`, (on) =>
        on.on(equal(`${alias}.${link.targetColumn}`, `${join}.${through.targetKey}`))
      )
      .select(sql.lit(1).as('one'))
      .where(equal(`${join}.${through.sourceKey}`, `${outer}.${link.parentColumn}`))
  }
  for (const rule of ruled) query = query.where(rule.where)
  return eb.exists(terms.length === 0 ? query : query.where(eb.and([...terms])))
}

/**
 * `EXISTS` through every relation of `path`, the innermost one holding `term` (of its column, {@link relatedColumn}),
 * each under its rules (`ruled`, from {@link pathRules}: their values bind outermost first, then the term's).
 */
export function existsThrough (
  eb: AnyExpressionBuilder,
  path: RelatedPath,
  table: string,
  term: Expression<SqlBool>,
  ruled: readonly (readonly ScopeCondition[])[] = []
): Expression<SqlBool> {
  let expression = term
  for (let depth = path.hops.length; depth >= 1; depth--) {
    const link = path.hops[depth - 1]
    if (link === undefined) continue
    const outer = depth === 1 ? table : aliasAt(depth - 1)
    expression = relatedExists(eb, link, outer, depth, [expression], ruled[depth - 1])
  }
  return expression
}

/**
 * The value of a many-to-one path for each parent row: a correlated scalar subquery, NULL when a relation
 * on the way is NULL or a row its rules hide (`ruled`, from {@link pathRules}: their values bind innermost
 * first). It sorts like a nullable column of the parent, and a cursor can read it back.
 */
export function relatedValue (
  path: RelatedPath,
  table: string,
  ruled: readonly (readonly ScopeCondition[])[] = []
): Expression<unknown> {
  let value: Expression<unknown> = sql.ref(relatedColumn(path))
  for (let depth = path.hops.length; depth >= 1; depth--) {
    const link = path.hops[depth - 1]
    if (link === undefined) continue
    const alias = aliasAt(depth)
    const outer = depth === 1 ? table : aliasAt(depth - 1)
    const terms = [
      equal(`${alias}.${link.targetColumn}`, `${outer}.${link.parentColumn}`),
      ...(ruled[depth - 1] ?? []).map((rule) => rule.where),
    ]
    const where = sql.join(terms, sql` and `)
    value = sql`(select ${value} from ${sql.table(link.table)} as ${sql.id(alias)} where ${where})`
  }
  return value
}

/** Conditions on the same relation path, and on the relations further along it. */
interface Group {
  readonly link: RelationLink
  readonly leaves: Condition[]
  readonly children: Map<string, Group>
}

/**
 * Gathers relation filters into one `EXISTS` per relation path, so that conditions on the same to-many
 * path hold for the same child (`tags.name__contains=fi&tags.name__ne=sci-fi`: one tag matching both),
 * nested for a second hop. Each returned condition binds its leaves' values, then its nested groups', in
 * the order the SQL names them.
 */
export function groupRelated (
  filters: ReadonlyArray<{ readonly path: RelatedPath; readonly condition: Condition }>,
  table: string,
  rules?: PathRules
): Condition[] {
  const root = new Map<string, Group>()
  for (const { path, condition } of filters) {
    let groups = root
    let group: Group | undefined
    for (const link of path.hops) {
      group = groups.get(link.field)
      if (group === undefined) {
        group = { link, leaves: [], children: new Map() }
        groups.set(link.field, group)
      }
      groups = group.children
    }
    group?.leaves.push(condition)
  }
  const build = (group: Group, outer: string, depth: number): Condition => {
    const inner = [
      ...group.leaves,
      ...[...group.children.values()].map((child) => build(child, aliasAt(depth), depth + 1)),
    ]
    // The relation's rules, bound before its terms: the subquery sees only the rows they admit.
    const ruled = linkRules(group.link, depth, rules)
    return {
      shape: `${group.link.field}[${rulesShape(ruled)}](${inner.map((condition) => condition.shape).join('&')})`,
      parameters: [...ruled, ...inner].flatMap((condition) => condition.parameters),
      expression: (eb) =>
        relatedExists(
          eb,
          group.link,
          outer,
          depth,
          inner.map((condition) => condition.expression(eb)),
          ruled
        ),
    }
  }
  return [...root.values()].map((group) => build(group, table, 1))
}
