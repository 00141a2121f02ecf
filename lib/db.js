import { Kysely } from 'kysely';
import { config as loadDotenv } from 'dotenv';
import { invalidOption, ViewsetErrors } from './errors.js';
import { redact } from './dialect/shared/connection.js';
import { connectorFor, connectorOf, knownUrls } from './dialect/pick-dialect.js';
import { AdoptedKysely, PreparedKysely } from './execution/prepared-kysely.js';
import { statementDialectOf, tracedAdopted, tracedDatabase } from './observability/traced-database.js';
let envLoaded = false;
/** The database URL in effect: the argument, else `DATABASE_URL` (from the environment or `.env`), else
 * `sqlite:base.db`. */
export function databaseUrl(url) {
    if (url !== undefined && url !== '')
        return url;
    if (!envLoaded) {
        loadDotenv({ quiet: true });
        envLoaded = true;
    }
    const fromEnv = process.env.DATABASE_URL;
    return fromEnv !== undefined && fromEnv !== '' ? fromEnv : 'sqlite:base.db';
}
/**
 * Creates a Kysely instance for a database URL. It returns at once; the connection opens on first use.
 * Whoever creates a database closes it (`await db.destroy()`, for example in an `onClose` hook).
 *
 * - `postgres://user@host:5432/name` or `postgresql://...` → a pg Pool
 * - `mysql://user@host:3306/name` or `mariadb://...` → a mysql2 pool (install `mysql2`); query parameters are
 *   mysql2 options (`?ssl={"rejectUnauthorized":true}`). Sessions run in UTC, BOOLEAN (TINYINT(1)) comes back
 *   as true/false and MariaDB JSON parsed, like on PostgreSQL.
 * - `sqlite:path/to/file.db` (relative to the working directory, or absolute) or `sqlite::memory:` → better-sqlite3
 * - no URL and no `DATABASE_URL` → the SQLite file `./base.db`
 *
 * SQLite files opened here get WAL journaling, a busy timeout and `foreign_keys = ON`.
 *
 * @example
 * ```ts
 * interface DB { items: { id: Generated<number>, name: string } }
 * const db = createDatabase<DB>()                       // DATABASE_URL or ./base.db
 * const pg = createDatabase<DB>('postgres://postgres@127.0.0.1:5432/test')
 * ```
 */
export function createDatabase(url, options = {}) {
    const target = databaseUrl(url);
    const settings = connectionSettings(options);
    const scheme = /^([a-z0-9+]+):/i.exec(target)?.[1]?.toLowerCase() ?? '';
    const connector = connectorFor(scheme);
    if (connector === undefined)
        throw new ViewsetErrors.InvalidDatabaseUrl(redact(target), `use ${knownUrls()}`);
    const { dialect, direct } = tracedDatabase(connector.connect(target, settings), statementDialectOf(scheme));
    const config = options.log === undefined ? { dialect } : { dialect, log: options.log };
    return direct === undefined ? new Kysely(config) : new PreparedKysely(config, direct);
}
/**
 * Your own Kysely instance, made as fast under viewsets as one from {@link createDatabase}: the statements
 * viewsets compile ahead of time are prepared once (SQLite: cached better-sqlite3 statements; PostgreSQL:
 * named statements on each pooled client) and reads run straight on the connection or pool you pass, the
 * one your Kysely's dialect was given. Everything else is your instance's: plugins, `db.transaction()`,
 * `destroy()`, pool settings. Pass the result to `createViewset({ db })`; keep using either instance elsewhere.
 *
 * - SQLite: pass the better-sqlite3 `Database` given to `SqliteDialect`.
 * - PostgreSQL: pass the pg `Pool` given to `PostgresDialect`. Its clients then send the SQL that viewsets
 *   compile as named statements (see `preparedStatements` of {@link CreateDatabaseOptions} for poolers).
 * - MySQL: pass the mysql2 pool; the instance is returned as it is (createDatabase has no shortcut there either).
 *
 * When your Kysely has a `log`, every statement goes through it so that the log sees each one (Kysely keeps
 * its log function private): on PostgreSQL still as named statements, on SQLite without the shortcut.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3'
 * import { Kysely, SqliteDialect } from 'kysely'
 *
 * const database = new Database('app.db')
 * const db = withPreparedStatements(new Kysely<DB>({ dialect: new SqliteDialect({ database }) }), database)
 * // PostgreSQL: const db = withPreparedStatements(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), pool)
 * app.register(createViewset({ db, table: 'items', schema: Item }), { prefix: '/items' })
 * ```
 */
export function withPreparedStatements(db, handle) {
    // a boolean: narrowing would lose DB
    const prepared = db instanceof PreparedKysely || db instanceof AdoptedKysely;
    if (prepared)
        return db;
    // A transaction's statements must run on its connection: the shortcut would run them beside it.
    if (db.isTransaction)
        invalidOption('db', 'withPreparedStatements takes a Kysely instance, not a transaction');
    const connector = connectorOf(db);
    const adopted = connector.adopt(handle);
    if (adopted === undefined)
        return db;
    return new AdoptedKysely(db, tracedAdopted(adopted, statementDialectOf(connector.urls[0] ?? '')));
}
/** The options with their defaults, checked now rather than when the first connection opens. */
function connectionSettings(options) {
    const statementTimeout = options.statementTimeout ?? 30_000;
    if (!Number.isFinite(statementTimeout) || statementTimeout < 0) {
        invalidOption('statementTimeout', 'must be a number of milliseconds, 0 or more');
    }
    return {
        poolSize: options.poolSize ?? 10,
        connectionTimeout: options.connectionTimeout ?? 5000,
        busyTimeout: options.busyTimeout ?? 5000,
        statementTimeout: Math.floor(statementTimeout),
        preparedStatements: options.preparedStatements,
        cancelOnDisconnect: options.cancelOnDisconnect,
        pooler: poolerOption(options.pooler),
        log: options.log,
    };
}
/** The `pooler` option, checked: a JavaScript caller may pass anything. */
function poolerOption(pooler) {
    if (pooler !== undefined && pooler !== 'pgbouncer')
        invalidOption('pooler', "must be 'pgbouncer' or left out");
    return pooler;
}
let defaultDatabase;
/**
 * The default database of this process, created on first call from `DATABASE_URL` (or `./base.db`).
 *
 * @example
 * ```ts
 * const db = getDatabase<DB>()
 * app.addHook('onClose', () => db.destroy())
 * ```
 */
export function getDatabase() {
    defaultDatabase ??= createDatabase();
    // one instance serves whatever DB the caller declares: the tables are the caller's word
    return defaultDatabase;
}
//# sourceMappingURL=db.js.map