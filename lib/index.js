export { createViewset, Viewset } from './viewset.js';
export { createDatabase, databaseUrl, getDatabase, withPreparedStatements } from './db.js';
export { viewsetDocs, viewsetSecuritySchemes } from './docs.js';
export { baseMethods, filterOperators, viewsetMethods } from './options.js';
export { problem, ViewsetErrors } from './errors.js';
export { viewsetFrameworkErrors } from './http/problem-handler.js';
export { securitySchemeName } from './http/auth.js';
export { problemSchema } from './schema/openapi.js';
export { handlerChannel, statementChannel } from './observability/channels.js';
export { viewsetLogs } from './observability/request-log.js';
//# sourceMappingURL=index.js.map