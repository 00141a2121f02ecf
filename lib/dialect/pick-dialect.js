import { MysqlAdapter, PostgresAdapter, SqliteAdapter } from 'kysely';
import { invalidOption } from '../errors.js';
import { mysqlColumnTypes } from './mysql/mysql-column-types.js';
import { postgresColumnTypes } from './postgres/postgres-column-types.js';
import { sqliteColumnTypes } from './sqlite/sqlite-column-types.js';
import { mysqlConnector } from './mysql/mysql-connector.js';
import { postgresConnector } from './postgres/postgres-connector.js';
import { sqliteConnector } from './sqlite/sqlite-connector.js';
// The one place that tells the databases apart: from a URL's scheme (to open one) and from a Kysely
// instance's adapter (to talk to one). Everything else asks the dialect it is given.
const connectors = [postgresConnector, mysqlConnector, sqliteConnector];
/** The connector that opens URLs of this scheme (lower-case, without the colon), or `undefined`. */
export function connectorFor(scheme) {
    return connectors.find((connector) => connector.urls.some((url) => url.slice(0, url.indexOf(':')) === scheme));
}
/** How the URLs createDatabase opens begin, for error messages: `postgres://, postgresql://, ... or sqlite:`. */
export function knownUrls() {
    const urls = connectors.flatMap((connector) => connector.urls);
    return `${urls.slice(0, -1).join(', ')} or ${urls.at(-1) ?? ''}`;
}
/** The connector of the database a Kysely instance talks to, from its adapter (to adopt the user's handle). */
export function connectorOf(db) {
    const adapter = db.getExecutor().adapter;
    if (adapter instanceof PostgresAdapter)
        return postgresConnector;
    if (adapter instanceof SqliteAdapter)
        return sqliteConnector;
    if (adapter instanceof MysqlAdapter)
        return mysqlConnector;
    invalidOption('db', `unsupported Kysely dialect ${adapter.constructor.name}; use SQLite, PostgreSQL or MySQL`);
}
/** Picks the dialect of a Kysely instance from its adapter. */
export async function dialectOf(db) {
    const adapter = db.getExecutor().adapter;
    // Dialect modules load on demand so that a SQLite user never loads pg's error codes, and so on.
    if (adapter instanceof PostgresAdapter)
        return (await import('./postgres/postgres-dialect.js')).postgresDialect;
    if (adapter instanceof SqliteAdapter)
        return (await import('./sqlite/sqlite-dialect.js')).sqliteDialect;
    if (adapter instanceof MysqlAdapter)
        return (await import('./mysql/mysql-dialect.js')).mysqlDialect;
    invalidOption('db', `unsupported Kysely dialect ${adapter.constructor.name}; use SQLite, PostgreSQL or MySQL`);
}
const columnTypes = {
    sqlite: sqliteColumnTypes,
    postgres: postgresColumnTypes,
    mysql: mysqlColumnTypes,
};
/** How the columns of a database are typed in generated code, by the dialect's name. */
export function columnTypesOf(name) {
    return columnTypes[name];
}
//# sourceMappingURL=pick-dialect.js.map