import type { ResolvedSoftDelete } from '../data/soft-delete-options.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { columnTypesOf } from '../dialect/pick-dialect.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import { invalidOption } from '../errors.js'
import { recordServedRequests } from '../execution/served-request.js'
import type { DefaultHandlerContext } from '../http/default-handler-context.js'
import type { ViewsetMethod } from '../options.js'
import { scopeCondition } from '../query/scope.js'
import { andLive, bothConditions, deletedModeOf, deletedQuery, deletedTerm } from '../query/soft-delete-term.js'
import type { SoftDeleteKind, SoftDeletePlan } from '../query/soft-delete-term.js'
import type { RelationRule } from '../relations/config.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import type { AnyDatabase } from '../sql.js'
import type { RegisteredViewset } from './registry.js'

// Mounting a soft-deleting viewset (issue 39, item 2): the column checked against the catalog, the viewset's rule
// wrapped so that every method's rule holds "the row lives" (query/soft-delete-term.ts), and the rule other viewsets'
// relations apply to its table wrapped alike.

/** The query parameter that shows deleted rows on LIST and GET. */
export const deletedParameter = 'deleted'

/** The methods only a soft-deleting viewset serves. */
const softDeleteMethods: readonly ViewsetMethod[] = ['RESTORE', 'PURGE']

/** The kind of the soft-delete column, or the startup error naming what is wrong with it. */
function kindOf (column: TableCatalog['columns'][number], dialect: ViewsetDialect, table: string): SoftDeleteKind {
  const kind = columnTypesOf(dialect.name).kindOf(column)
  const named = `column "${table}.${column.name}" (${column.declared})`
  if (kind === 'date-time') {
    if (!column.nullable) invalidOption('softDelete.column', `${named} must be nullable: NULL marks a live row`)
    return 'timestamp'
  }
  if (kind === 'boolean') {
    if (column.nullable) invalidOption('softDelete.column', `${named} must be NOT NULL (false marks a live row)`)
    return 'boolean'
  }
  return invalidOption('softDelete.column', `${named} is neither a timestamp nor a boolean column`)
}

/**
 * The soft delete of a viewset being mounted, checked against the catalog: the column exists, is a nullable timestamp
 * or a NOT NULL boolean; RESTORE and PURGE are registered only with `softDelete`. `undefined` without it.
 *
 * @example
 * ```ts
 * const plan = softDeletePlanOf(resolved, db, { dialect, described }, methods) // { column: 'deleted_at', … }
 * ```
 */
export function softDeletePlanOf (
  resolved: { readonly table: string; readonly softDelete: ResolvedSoftDelete | undefined },
  db: AnyDatabase,
  { dialect, described }: { readonly dialect: ViewsetDialect; readonly described: TableCatalog },
  methods: readonly ViewsetMethod[]
): SoftDeletePlan | undefined {
  const { softDelete, table } = resolved
  if (softDelete === undefined) {
    const listed = methods.filter((method) => softDeleteMethods.includes(method))
    if (listed.length > 0) invalidOption('methods', `${listed.join(' and ')} need the softDelete option`)
    return undefined
  }
  const column = described.columns.find(({ name }) => name === softDelete.column)
  if (column === undefined) {
    const columns = described.columns.map(({ name }) => name).join(', ')
    return invalidOption('softDelete.column',
      `"${softDelete.column}" is not a column of "${table}" (columns: ${columns})`)
  }
  const marked = { column: column.name, kind: kindOf(column, dialect, table) }
  return Object.freeze({
    ...marked,
    showDeleted: softDelete.showDeleted,
    live: scopeCondition(db, table, deletedTerm(marked, false)),
    deleted: scopeCondition(db, table, deletedTerm(marked, true)),
  })
}

/** What mounting reads and replaces of a viewset's declaration: its rule, and how its helpers get one. */
interface RuledDeclaration {
  readonly rowRules: { readonly scopeOf: DefaultHandlerContext['scopeOf'] }
  setHelperRule(rule: DefaultHandlerContext['scopeOf']): void
}

/**
 * The declaration's rule ANDed with the soft-delete term of each method and request (deletedModeOf), which its
 * routes, handlers and helpers then apply; its rule as it is without `softDelete`.
 *
 * @example
 * ```ts
 * const declaration = { ...declared, rowRules: { ...declared.rowRules, scopeOf: softDeleteScopeOf(declared, plan) } }
 * ```
 */
export function softDeleteScopeOf (
  declaration: RuledDeclaration,
  plan: SoftDeletePlan | undefined
): DefaultHandlerContext['scopeOf'] {
  const { scopeOf } = declaration.rowRules
  if (plan === undefined) return scopeOf
  const softScopeOf: DefaultHandlerContext['scopeOf'] = (request, token, method) => {
    const mode = deletedModeOf(method, request)
    return bothConditions(scopeOf(request, token, method), mode === 'any' ? undefined : plan[mode])
  }
  // The helpers (this.query(), this.findById()…) leave deleted rows out too, for the request they serve.
  declaration.setHelperRule(softScopeOf)
  recordServedRequests()
  return softScopeOf
}

/** The declaration with {@link softDeleteScopeOf} as its rule: what mounting reads from the catalog check on. */
export function withSoftDelete<D extends RuledDeclaration> (declared: D, plan: SoftDeletePlan | undefined): D {
  return { ...declared, rowRules: { ...declared.rowRules, scopeOf: softDeleteScopeOf(declared, plan) } }
}

// The wrapped relation rule of each soft-deleting viewset, for a relation whose `rulesFrom` names the viewset itself.
const liveRules = new WeakMap<object, RelationRule<unknown>>()
// One identity per viewset rule and column, so that two viewsets alike on both still share one relation rule.
const identities = new WeakMap<object, Map<string, object>>()
const noRule = {}

function identityOf (rule: object, column: string): object {
  const byColumn = identities.get(rule) ?? new Map<string, object>()
  identities.set(rule, byColumn)
  const identity = byColumn.get(column) ?? Object.freeze({})
  byColumn.set(column, identity)
  return identity
}

/**
 * The row rule other viewsets' relations, relation paths, child counts and foreign-key checks apply to this
 * viewset's table: its own (if any) AND "the row lives". As it is without `softDelete`.
 */
export function softDeleteRule (
  rule: RegisteredViewset['rule'],
  plan: SoftDeletePlan | undefined,
  viewset: object
): RegisteredViewset['rule'] {
  if (plan === undefined) return rule
  const own = rule?.source
  const source: RelationRule<unknown> = { scope: (eb, context) => andLive(own?.scope(eb, context), plan) }
  liveRules.set(viewset, source)
  return { source, identity: identityOf(rule?.identity ?? noRule, `${plan.column}:${plan.kind}`) }
}

/** The rule a relation's `rulesFrom` object stands for: a soft-deleting viewset's wrapped rule, else the object. */
export function liveRuleOf (rule: RelationRule<unknown> | undefined): RelationRule<unknown> | undefined {
  return rule === undefined ? undefined : (liveRules.get(rule) ?? rule)
}

/**
 * LIST's (or GET's) query string with `deleted` (`include` or `only`), documented; a query string that already has a
 * parameter of that name (a filter field `deleted`) fails at startup.
 */
export function withDeletedParameter (querystring: JsonSchema, plan: SoftDeletePlan | undefined): JsonSchema {
  if (plan === undefined) return querystring
  const properties = propertiesOf(querystring)
  if (Object.hasOwn(properties, deletedParameter)) {
    invalidOption('softDelete', `LIST already has a query parameter "${deletedParameter}" (a filter field?): ` +
      'rename the field, or serve the column under another name')
  }
  return { ...querystring, properties: { ...properties, [deletedParameter]: { ...deletedQuery } } }
}

/** The entity with the soft-delete column read-only, when it is a schema field: the server writes it. */
export function withReadOnlyColumn<E extends JsonSchema> (entity: E, plan: SoftDeletePlan | undefined): E {
  const properties = propertiesOf(entity)
  const property = plan === undefined ? undefined : properties[plan.column]
  if (plan === undefined || property === undefined) return entity
  return { ...entity, properties: { ...properties, [plan.column]: { ...property, readOnly: true } } }
}
