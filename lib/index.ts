export { Viewset } from './viewset.js'
export { createViewset } from './create-viewset.js'
export { fieldAccessByRole } from './query/field-access.js'
export type { FieldAccess, FieldAccessContext, FieldAccessFunction } from './query/field-access.js'
export type { FullTextOptions } from './query/full-text.js'
export type {
  CreateManyRequest, CreateRequest, ElementRequest, IdOf, IdParams, KeyFields, KeyOf, ListRequest, PageParameters,
  PageParameters as Pagination, UpdateRequest, ValidatedListQuery,
} from './requests.js'
export { createDatabase, databaseUrl, getDatabase, withPreparedStatements } from './db.js'
export type { CreateDatabaseOptions } from './db.js'
export { viewsetDocs, viewsetSecuritySchemes } from './docs.js'
export type { ViewsetDocsOptions } from './docs.js'
export { baseMethods, filterOperators, historyMethods, softDeleteMethods, viewsetMethods } from './viewset-options.js'
export { aggregateFunctions } from './query/aggregate-options.js'
export type { AggregateFunction, AggregateOptions } from './query/aggregate-options.js'
export type {
  AfterWriteFunction, AfterWriteMethod, AuthorizedMethod, BeforeWriteFunction, CheckedSchema, DerivedScopedMethod,
  FieldOf, FilterOperator, ListOptions, ReplicaOptions, RowChange, RowContext, RowLevelSecurityOptions, ScopedMethod,
  ScopeFunction, ScopeRules, TokenClaims, ViewsetMethod, ViewsetOptions, ViewsetToken, WriteMethod,
} from './options.js'
export type {
  PrefetchRelated, RelatedConfig, RelationRule, RelationRuleContext, RulesFrom, SelectRelated,
} from './relations/config.js'
export type { Precondition } from './data/precondition.js'
export type { IdempotencyOptions } from './data/idempotency-options.js'
export type { ShowDeletedFunction, SoftDeleteOptions } from './data/soft-delete-options.js'
export type { HistoryActor, HistoryOptions } from './data/history-options.js'
export type { ChangesOptions } from './data/changes-options.js'
export type { CustomRouteSchemaOptions } from './http/custom-answers.js'
export { orderByPattern, parseOrderBy } from './query/order-by.js'
export type { SortKey } from './query/order-by.js'
export { problem, ViewsetErrors } from './errors.js'
export { viewsetFrameworkErrors } from './http/problem-handler.js'
export type { DatabaseFault } from './errors.js'
export type { FieldError, Problem } from './errors.js'
export { securitySchemeName } from './http/auth.js'
export { problemSchema } from './schema/openapi.js'
export { bulkheadChannel, cacheChannel, handlerChannel, statementChannel } from './observability/channels.js'
export { viewsetLogs } from './observability/request-log.js'
export { viewsetServerTiming } from './observability/server-timing.js'
export { viewsetReadiness } from './observability/health.js'
export { viewsetIndexReport } from './mount/viewset-index-report.js'
export type { IndexReportEntry, IndexUse } from './mount/index-report.js'
export type { ViewsetReadinessOptions } from './observability/health.js'
export type {
  BulkheadEvent, CacheEvent, CacheEventKind, HandlerContext, StatementContext, StatementDialect, StatementOperation,
} from './observability/channels.js'
export type { AnsweredProblem } from './observability/problem-code.js'
export { viewsetBatch } from './http/batch-plugin.js'
export type { ViewsetBatchOptions } from './http/batch-options.js'
