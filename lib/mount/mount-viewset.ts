import type { TObject } from '@sinclair/typebox'
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify'
import { ForeignKeyCheck } from '../data/foreign-key-check.js'
import { Statements } from '../data/statements.js'
import { jsonTextDecoder } from '../data/json-text.js'
import { TableGateway } from '../data/table-gateway.js'
import type { ColumnInfo, ViewsetDialect } from '../dialect/dialect.js'
import type { AnyDatabase, Row } from '../sql.js'
import { conflictKeyProblem, rowKeyProblem } from '../dialect/shared/catalog.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import { columnTypesOf, dialectOf } from '../dialect/pick-dialect.js'
import { ViewsetErrors } from '../errors.js'
import { carryCancellationThroughUserCode } from '../execution/cancellation.js'
import { underlyingDatabase } from '../execution/request-transaction.js'
import { recordServedRequests } from '../execution/served-request.js'
import {
  canVerifyTokens, checkProtectedMethods, checkProtectedRoutes, checkRuleVerifier, checkVerifier, withDerivedMethods,
} from '../http/auth.js'
import { representationTag, versionTag } from '../http/conditional-requests.js'
import { DefaultHandlers } from '../http/default-handlers.js'
import type { DefaultHandlerContext } from '../http/default-handler-context.js'
import type { MountedViewset } from '../http/plugin.js'
import type { RouteContext } from '../http/route-context.js'
import { mountRowSecurity } from '../http/row-level-security.js'
import { viewsetRoutes } from '../http/routes.js'
import { ReadRouting } from '../data/read-routing.js'
import { replicaFallback, readAfterWriteHook } from './replica-reads.js'
import type { ResolvedOptions, ViewsetMethod, ViewsetOptions } from '../options.js'
import { bindParent } from '../http/parent-binding.js'
import type { FieldAccessFunction, FieldRules } from '../query/field-access.js'
import { customRouteViews, narrowListPlan } from '../http/field-hiding.js'
import { fieldRulesOf, fieldRulesSource, servedSchema } from './field-rules.js'
import { planFields } from '../query/fields.js'
import { withDeclaredPaths } from '../query/json-fields.js'
import type { FieldsPlan } from '../query/fields.js'
import { createListPlan } from '../query/list.js'
import { checkScopeEntries } from '../query/scope-rules.js'
import type { RelatedConfig } from '../relations/config.js'
import { checkDefaultRelations } from '../relations/default-relations.js'
import { relationLimits } from '../relations/declaration.js'
import { createRelationLoader, relationFields } from '../relations/loader.js'
import type { RelationLoader } from '../relations/batched-loader.js'
import { viewsetComponents } from '../schema/components.js'
import { documentRelationRules } from './relation-docs.js'
import type { JsonSchema } from '../schema/derive.js'
import { deriveEntity, deriveSerializerSchema, withChildLimits, writableFields } from '../schema/derive.js'
import { nameFromPrefix } from '../schema/openapi.js'
import { sharedSerializer } from '../schema/serializer.js'
import { columnTypesProblem } from './column-types-check.js'
import { ruleOf, servedRowRules } from './served-row-rules.js'
import { mergeListQuery } from './list-querystring.js'
import { readBackProblem } from './read-back-check.js'
import { checkCompositeRelations, serverSetKeyColumns, settleKey, withSettledKey } from './row-key-check.js'
import type { RowKey } from '../row-key.js'
import { routeSchemas } from './keyed-route-schemas.js'
import { overrideHandlers } from './override-handlers.js'
import type { OverriddenName, ViewsetHandlers } from './override-handlers.js'
import { checkedIndexReport } from './index-report.js'
import { dateTimes, keyRules } from './column-roles.js'
import { idempotentRoutes } from './idempotent-routes.js'
import { changeFeedRoutes } from './change-routes.js'
import { registerViewset, whenAllRegistered } from './registry.js'
import { resolveRelationRules } from './relation-rules.js'
import { checkFullText } from './full-text-check.js'
import { withNestedWrites } from './writable-relations.js'
import {
  softDeletePlanOf, softDeleteRule, withReadOnlyColumn, withSoftDelete,
} from './soft-delete-check.js'
import { SoftDeleteHandlers } from '../http/soft-delete-handlers.js'
import type { SoftDeletePlan } from '../query/soft-delete-term.js'
import { aggregateContextOf, aggregatePlanOf } from './aggregate-mount.js'
import { changesContextOf, withChangesQuery } from './changes-mount.js'
import { historyContextOf, mountHistory, withHistory } from './history-mount.js'
import type { MountedHistory } from './history-mount.js'

// Mounting, phase 2 of the option checks: everything that needs the catalog (or the app) is checked here,
// in the order `mountViewset` reads, before any route exists. Phase 1 (no database) ran in the Viewset
// constructor (options.ts). Nothing here runs again while serving a request.

/** The options mounting reads, as the constructor checked them. */
export type MountOptions = Pick<
  ViewsetOptions<unknown, never, never>,
  | 'authenticate'
  | 'authorize'
  | 'searchFields'
  | 'orderingFields'
  | 'defaultOrder'
  | 'filterFields'
  | 'alwaysCount'
  | 'defaultRelations'
  | 'primaryKey'
  | 'fieldAccess' | 'fullText' | 'groupByFields' | 'aggregateFields'
> & {
  /** Only told apart from another viewset's (relations take the rule from the viewset's `scope` method). */
  readonly scope?: unknown
}

/** What a viewset hands to mounting: its checked options and the handlers and hooks it overrides. */
export interface ViewsetDeclaration {
  /** The viewset, as the app's registry lists it. */
  readonly viewset: object
  readonly resolved: ResolvedOptions
  readonly options: MountOptions
  readonly db: AnyDatabase
  readonly readDb: AnyDatabase
  readonly schema: TObject
  /** The schema fields that are columns (relation fields excluded). */
  readonly columns: readonly string[]
  readonly relatedConfig: RelatedConfig<unknown> | undefined
  /** The `static listQuery` of the viewset's class. */
  readonly listQuery: JsonSchema | undefined
  /** The handlers and hooks the viewset overrides (`scope` and `beforeWrite` counted when given as options). */
  readonly overridden: ReadonlySet<OverriddenName>
  /** The viewset's handlers: the routes call those it overrides. */
  readonly handlers: ViewsetHandlers
  readonly rowRules: Pick<DefaultHandlerContext, 'scopeOf' | 'beforeWrite' | 'notFound'> &
    { readonly afterWrite: NonNullable<DefaultHandlerContext['afterWrite']> }
  readonly protect: onRequestAsyncHookHandler
  /** The viewset's `fieldAccess` method: applied when `overridden` has it. */
  readonly fieldAccess: FieldAccessFunction
  customRoutes(fastify: FastifyInstance): void | Promise<void>
  /** Sets the rule the viewset's helpers apply (a nested viewset's keeps to the request's parent). */
  setHelperRule(rule: ViewsetDeclaration['rowRules']['scopeOf']): void
}

/** What a mounted viewset serves its helpers from (`findById`, `insert`, `contains`…): frozen. */
export interface PreparedViewset {
  readonly resource: TableGateway
  readonly defaults: DefaultHandlers
  /** `?fields=` of GET. */
  readonly fields: FieldsPlan
  /** What the routes are declared from: the custom routes' answers and schemas read it too (http/custom-answers.ts). */
  readonly context: RouteContext
}

/** The catalog facts mounting reads, once checked. */
interface CheckedTable {
  readonly dialect: ViewsetDialect
  readonly described: TableCatalog
  readonly columns: ReadonlyMap<string, ColumnInfo>
  readonly key: RowKey // the `primaryKey` option, else `id`, else the table's own primary key (row-key-check.ts)
  readonly unindexedOrder?: ReadonlySet<string> // the index report's orderings: their pages are heavy statements
  readonly softDelete: SoftDeletePlan | undefined
  readonly history?: MountedHistory | undefined
}

/**
 * Reads the table and checks the viewset against it: the table exists, the primary key identifies one row
 * (and a view serves reads only), every schema field is a column, and on MySQL a new row can be read back.
 */
async function checkTable (declaration: ViewsetDeclaration, methods: readonly ViewsetMethod[]): Promise<CheckedTable> {
  const { db, resolved } = declaration
  const dialect = await dialectOf(db)
  const described = await dialect.catalog.table(db, resolved.table)
  if (described === undefined || described.columns.length === 0) throw new ViewsetErrors.UnknownTable(resolved.table)
  const key = settleKey(resolved, described, declaration.columns)
  const keyProblem = rowKeyProblem(described, key.columns, declaration.options.primaryKey !== undefined, methods)
  if (keyProblem) throw new ViewsetErrors.InvalidOption(keyProblem.option, keyProblem.message)
  const columns = new Map<string, ColumnInfo>(described.columns.map((column) => [column.name, column]))
  for (const field of declaration.columns) {
    if (!columns.has(field)) {
      throw new ViewsetErrors.UnknownColumn(field, resolved.table, described.columns.map(({ name }) => name).join(', '))
    }
  }
  const readBack = readBackProblem(dialect, described, { key, overridden: declaration.overridden }, methods)
  if (readBack !== undefined) throw new ViewsetErrors.InvalidOption('primaryKey', readBack)
  const softDelete = softDeletePlanOf(resolved, db, { dialect, described }, methods)
  return { dialect, described, columns, key, softDelete }
}

/** The entity as served and its relations, with `conflictFields` and `defaultRelations` checked against them. */
async function planEntity (declaration: ViewsetDeclaration, table: CheckedTable, name: string, prefix: string) {
  const { db, schema, resolved, relatedConfig } = declaration
  const { primaryKey, versionField, conflictFields } = resolved
  checkCompositeRelations(table.key, relatedConfig, schema)
  const relations = await createRelationLoader(db, table.dialect, relatedConfig, schema, resolved.table, primaryKey)
  // The version column is the server's, read-only like the key: every update increments it.
  const fieldsOfRelations = relationFields(relatedConfig)
  const columns = new Map(table.columns)
  const serverKeys = serverSetKeyColumns(table.key, table.described)
  const derived = deriveEntity(schema, columns, fieldsOfRelations, name, serverKeys, versionField, table.dialect.name)
  const entity = withReadOnlyColumn(withChildLimits(derived, relationLimits(relatedConfig, schema)), table.softDelete)
  const columnTypes = columnTypesOf(table.dialect.name)
  const serverSet = (field: string) => serverKeys.has(field) || field === versionField
  const typesProblem = columnTypesProblem(schema, declaration.columns, table.described, columnTypes, serverSet)
  if (typesProblem !== undefined) throw new ViewsetErrors.InvalidOption('schema', typesProblem)
  if (conflictFields !== undefined) {
    const writable = writableFields(entity).filter((field) => declaration.columns.includes(field))
    const anyKey = table.dialect.capabilities.upsertOnAnyKey
    const problem = conflictKeyProblem(table.described, conflictFields, writable, anyKey, table.softDelete?.column)
    if (problem !== undefined) throw new ViewsetErrors.InvalidOption('conflictFields', problem)
  }
  const defaultRelations = checkDefaultRelations(
    declaration.options.defaultRelations,
    relations?.fields ?? new Set(),
    entity
  )
  const { foreignKeys } = table.described
  const keys = new ForeignKeyCheck(resolved.table, foreignKeys, keyRules(relatedConfig, foreignKeys), table.dialect)
  const target = { table: resolved.table, prefix, columns: table.columns, entity, foreignKeys: keys }
  const parent = bindParent(resolved.parent, target)
  // A body need not send what the path says: the bound columns are optional in the bodies.
  const served = parent === undefined ? entity : parent.optionalIn(entity)
  return { relations, entity: served, name, defaultRelations, foreignKeys: keys, parent }
}

/** The table gateway of the viewset: its statements, its write target and how it tags a row's version. */
function buildTableGateway (
  declaration: ViewsetDeclaration,
  table: CheckedTable,
  relations: RelationLoader | undefined,
  versioning: { represent: (row: Row) => string; defaultRelations: ReadonlySet<string> | undefined },
  selected: readonly string[]
): TableGateway {
  const { db, resolved } = declaration
  const { versionField, conflictFields } = resolved
  const tagOf = (row: Row) =>
    versionField === undefined ? representationTag(versioning.represent(row)) : versionTag(row[versionField])
  const { described } = table
  return new TableGateway({
    dialect: table.dialect,
    statements: new Statements(db, resolved.table, table.key, selected, table.dialect, jsonTextDecoder(declaration)),
    target: {
      table: resolved.table,
      key: table.key,
      columns: selected,
      catalog: table.columns,
      dateTimes: dateTimes(declaration.schema, declaration.columns),
      deleteCascades: described.deleteCascades,
    },
    relations,
    versioning: { versionField, tagOf, relations: versioning.defaultRelations },
    uniqueKeys: [...(described.primaryKey.length > 0 ? [described.primaryKey] : []), ...described.unique],
    conflictFields,
    unindexedOrder: table.unindexedOrder,
    wholeRows: table.history !== undefined,
  })
}

/** What the default writes read of the options: the upsert key, If-Match, and the bulk writes' bounds. */
function upsertOptions ({ conflictFields, requireIfMatch, maxAffected, maxBulk, versionField }: ResolvedOptions) {
  return { conflictFields, requireIfMatch, bulkLimits: { maxAffected, maxBulk, versionField } }
}

/** The data layer of a viewset and what its routes read, built once the catalog is checked. */
function buildViewset (
  fastify: FastifyInstance,
  methods: readonly ViewsetMethod[],
  declaration: ViewsetDeclaration,
  table: CheckedTable,
  planned: Awaited<ReturnType<typeof planEntity>>,
  routing: ReadRouting
): { context: RouteContext; defaults: DefaultHandlers; rules: FieldRules | undefined } {
  const { resolved, options, columns, db, readDb } = declaration
  const { relations, entity, name, defaultRelations, foreignKeys } = planned
  // The loader may need keys the schema does not serve; they are selected, never serialized.
  const selected = [...new Set([...columns, ...(relations?.parentColumns ?? [])])]
  const ruled = declaration.overridden.has('fieldAccess')
  const serialized = servedSchema(deriveSerializerSchema(entity), table.key.columns, ruled)
  const fields = withDeclaredPaths(planFields(serialized, columns, selected, relations?.keys ?? new Map(),
    defaultRelations), { options, entity, columns, dialect: table.dialect }, serialized)
  const related = { table: resolved.table, links: relations?.links ?? new Map() }
  const { dialect, softDelete } = table
  const list = createListPlan({ dialect, resolved, options, entity, columns, selected, fieldsPlan: fields, related })
  // A whole row as GET sends it: the bytes a representation's ETag hashes. Compiled now: it writes every field, so a
  // field the serializer cannot write fails at startup.
  const represent = sharedSerializer({ $ref: `${name}#` }, { [name]: { ...serialized, $id: name } }, 'now')
  const resource = buildTableGateway(declaration, table, relations, { represent, defaultRelations }, selected)
  const listQuerystring = withChangesQuery(mergeListQuery(list, declaration, softDelete), resolved)
  const aggregate = aggregatePlanOf(methods, table, { entity, columns, related, options, list })
  const { rules, hiding } = fieldRulesOf({
    ...{ dialect, resolved, options, entity, columns, selected, defaultRelations, related, list, aggregate },
    ...fieldRulesSource(declaration),
    relationKeys: relations?.keys ?? new Map(),
    listQuerystring: listQuerystring.querystring,
  })
  const rowRules = withHistory(servedRowRules(declaration, planned.parent), table.history)
  const defaults = new DefaultHandlers({
    listPlanOf: hiding === undefined ? undefined : narrowListPlan,
    ...rowRules,
    ...{ resource, listQuery: list.query, db, readDb, readerOf: routing.readerOf, foreignKeys, softDelete },
    writable: writableFields(entity),
    ...upsertOptions(resolved),
  })
  const components = viewsetComponents(entity, name, table.key.columns, methods, {
    relations: relations?.fields ?? new Set<string>(), loaded: defaultRelations, ruled,
  })
  const protectedMethods = withDerivedMethods(resolved.protectedMethods, methods)
  const context: RouteContext = {
    resource,
    ...{ readDb, readerOf: routing.readerOf, db },
    schemas: routeSchemas(resolved, table.key, {
      entity: { ...entity, $id: name }, serialized, name, components, list: listQuerystring,
    }, planned.parent?.params ?? {}),
    auth: { protectedMethods, options, verifiesTokens: canVerifyTokens(fastify, options) },
    versions: { represent, versionField: resolved.versionField, requireIfMatch: resolved.requireIfMatch },
    paging: { maxOffset: resolved.maxOffset, pagination: resolved.pagination },
    ...{ fields, hiding, prefix: fastify.prefix, table: resolved.table },
    aggregate: aggregateContextOf(aggregate, list.query, rowRules.scopeOf),
    softDelete: softDelete && new SoftDeleteHandlers(defaults, softDelete),
    history: historyContextOf(table, { entity, columns, resolved, ...rowRules }),
    changes: changesContextOf(resolved, table, entity, list.query, rowRules.scopeOf),
  }
  return { context, defaults, rules }
}

/** The checks that need the app or the database: the token verifiers, the scope's entries, the table, RLS's roles. */
async function checkMount (
  fastify: FastifyInstance,
  methods: readonly ViewsetMethod[],
  given: ViewsetDeclaration
): Promise<{ table: CheckedTable, declaration: ViewsetDeclaration }> {
  const { resolved, options, overridden } = given
  // Which methods are registered is the register() call's: checked with the app, as the tests of startup expect.
  checkProtectedMethods(resolved.protectedMethods, methods)
  checkVerifier(fastify, resolved.protectedMethods, options)
  const ruled = resolved.rowLevelSecurity === undefined ? overridden : new Set([...overridden, 'rowLevelSecurity'])
  checkRuleVerifier(fastify, ruled, options)
  checkScopeEntries(options.scope, methods, resolved.conflictFields !== undefined)
  const table = await checkTable(given, methods)
  // From here on, the options name the key the catalog settled (a composite one, or the table's own).
  const declaration = { ...given, resolved: withSettledKey(resolved, table.key) }
  const security = { table: resolved.table, auth: options }
  await mountRowSecurity(fastify, resolved.rowLevelSecurity, declaration.db, table.dialect, security)
  return { table: await checkFullText(declaration, table), declaration }
}

// Rules run before the handler's queries: no promise hooks for them (a field rule that awaits: query/field-access.ts).
const ruleMembers = new Set<string>(['scope', 'fieldAccess'])
/**
 * Mounts a viewset on its plugin's instance. First the checks that need the database or the app, in this
 * order: a verifier for the protected methods, the table and its key, the columns (checkTable), the
 * relations, `conflictFields` and `defaultRelations` (planEntity), the LIST options and `listQuery`
 * (buildViewset). Then the table gateway, the default handlers and the routes, and the viewset joins the
 * app's registry. A mistake fails `app.ready()`; none is left to surface in a request.
 *
 * @example
 * ```ts
 * viewsetPlugin(table, async (fastify) => (await mountViewset(fastify, methods, declaration)).mounted)
 * ```
 */
export async function mountViewset (
  fastify: FastifyInstance,
  methods: readonly ViewsetMethod[],
  given: ViewsetDeclaration
): Promise<{ prepared: PreparedViewset; mounted: MountedViewset }> {
  const { table, declaration: keyed } = await checkMount(fastify, methods, given)
  const declaration = withSoftDelete(keyed, table.softDelete) // its rule holds "the row lives" from here on
  const { resolved, options } = declaration
  const name = resolved.name ?? nameFromPrefix(fastify.prefix, resolved.table)
  const planned = await planEntity(declaration, table, name, fastify.prefix)
  const reported = { ...declaration, ...declaration.options, ...resolved, entity: planned.entity }
  const { report, unindexedOrder } = await checkedIndexReport(fastify.prefix, table.dialect, table.described, reported)
  const routing = new ReadRouting(declaration.db, declaration.readDb, table.dialect, resolved.replica)
  const decode = jsonTextDecoder(declaration)
  const history = await mountHistory(resolved, methods, { db: declaration.db, ...table, decode })
  const checked = { ...table, unindexedOrder, history }
  const { context, defaults, rules } = buildViewset(fastify, methods, declaration, checked, planned, routing)
  // Handlers and hooks of the user's may await before their queries: their cancellation scope rides on the promises.
  if ([...declaration.overridden].some((name) => !ruleMembers.has(name))) carryCancellationThroughUserCode()
  // The helpers of a viewset with a rule find the request they serve (execution/served-request.ts).
  if (declaration.overridden.has('scope') || planned.parent !== undefined) recordServedRequests()
  // The helpers of a nested viewset reach the rows of the request's parent only.
  const { db, viewset, rowRules } = declaration
  const { parent } = planned
  if (parent !== undefined) declaration.setHelperRule(parent.scoped(db, rowRules.scopeOf))
  const served = replicaFallback(overrideHandlers(defaults, declaration), routing, table.dialect)
  const handlers = withNestedWrites(fastify, served, { declaration, defaults, context, rules })
  const feed = { declaration, table, context, defaults, relations: planned.relations }
  const all = changeFeedRoutes(fastify, viewsetRoutes(methods, handlers, context), feed)
  const routes = await idempotentRoutes(all, resolved, db, table.dialect)
  if (routing.routed) fastify.addHook('onSend', readAfterWriteHook(routing))
  const rule = softDeleteRule(ruleOf(declaration), table.softDelete, viewset)
  // Under the database a request transaction wraps: viewsets over one database find each other's rules.
  const registered = underlyingDatabase(db)
  const entry = { table: resolved.table, db: registered, prefix: fastify.prefix, viewset, rule, fields: rules }
  registerViewset(fastify, { ...entry, indexReport: report, rowLevelSecurity: Boolean(resolved.rowLevelSecurity) })
  const slots = [...(planned.relations?.ruleSlots ?? []), ...planned.foreignKeys.slots]
  if (slots.length > 0) whenAllRegistered(fastify, (entries) => { resolveRelationRules(entries, registered, slots) })
  documentRelationRules(fastify, context.schemas.components, planned.relations?.links)
  const mounted: MountedViewset = {
    schemas: context.schemas.components.schemas,
    routes,
    ...{ dialect: table.dialect, conflictDetail: resolved.conflictDetail },
    validatorsAtStartup: declaration.listQuery !== undefined,
    protect: declaration.protect,
    ...(parent === undefined
      ? {}
      : {
          preHandler: async (request, reply) => {
            const reads = request.method === 'GET' || request.method === 'HEAD'
            await parent.check(request, reply, reads ? routing.readerOf(request) : db)
          },
        }),
    ...(context.hiding === undefined ? {} : { customPreHandler: customRouteViews(context.hiding) }),
    customRoutes: async (instance) => { await declaration.customRoutes(instance) },
    checkProtectedRoutes: (count) => { checkProtectedRoutes(fastify, resolved.protectedMethods, count, options) },
  }
  return { prepared: Object.freeze({ resource: context.resource, defaults, fields: context.fields, context }), mounted }
}
