import { AliasNode, FromNode, SelectQueryNode, TableNode } from 'kysely'
import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  OperationNode,
  QueryResult,
  RootOperationNode,
} from 'kysely'
import type {
  AdoptedDatabase, DirectExecutor, DirectResult, OpenedDatabase, SyncTransaction,
} from '../dialect/shared/connection.js'
import { statementChannel, traceEventually } from './channels.js'
import { costOf } from '../execution/cost-class.js'
import type { StatementContext, StatementDialect, StatementOperation } from './channels.js'

// The two places every statement of a database from createDatabase passes through: its shortcut (the SQLite
// statement cache, PostgreSQL's named statements on the pool), and its Kysely driver's connections (everything
// else: builders, transactions, MySQL). A statement the shortcut declines goes on to the driver and is published
// there once. Raw SQL (BEGIN/COMMIT, session settings, the catalog) is not a statement event.

const operations: Readonly<Record<string, StatementOperation>> = {
  SelectQueryNode: 'select',
  InsertQueryNode: 'insert',
  UpdateQueryNode: 'update',
  DeleteQueryNode: 'delete',
}

/** The name of the table an operation node names first (`FROM`, `INTO`, `UPDATE`), or `undefined`. */
function tableOf (node: OperationNode | undefined): string | undefined {
  if (node === undefined) return undefined
  if (TableNode.is(node)) return node.table.identifier.name
  if (AliasNode.is(node)) return tableOf(node.node)
  if (FromNode.is(node)) return tableOf(node.froms[0])
  // A LATERAL join's subquery (a limited relation on PostgreSQL): the table it reads.
  if (SelectQueryNode.is(node)) return statementTable(node)
  return undefined
}

/**
 * The table of a statement: its `from` (SELECT, DELETE), `into` (INSERT) or `table` (UPDATE); when that is no table
 * (SQLite's batched relations read their keys from `json_each`), the first table it joins.
 */
function statementTable (query: RootOperationNode): string | undefined {
  switch (query.kind) {
    case 'SelectQueryNode':
    case 'DeleteQueryNode':
      return tableOf(query.from) ?? tableOf(query.joins?.[0]?.table)
    case 'InsertQueryNode':
      return tableOf(query.into)
    case 'UpdateQueryNode':
      return tableOf(query.table) ?? tableOf(query.joins?.[0]?.table)
    default:
      return undefined
  }
}

/** A statement's context, or `undefined` for raw SQL. */
function contextOf (compiled: CompiledQuery, dialect: StatementDialect, prepared: boolean, startTime: number) {
  const operation = operations[compiled.query.kind]
  if (operation === undefined) return undefined
  const context: StatementContext = {
    dialect,
    operation,
    table: statementTable(compiled.query),
    sql: compiled.sql,
    prepared,
    heavy: costOf(compiled.query) === 'heavy',
    startTime,
  }
  return context
}

/** The rows a result returned, else those a write affected. */
function rowsOf (result: { rows: unknown[], numAffectedRows?: bigint | undefined }): number {
  const { rows, numAffectedRows } = result
  return rows.length > 0 || numAffectedRows === undefined ? rows.length : Number(numAffectedRows)
}

/**
 * The shortcut, published: `start` only once it took the statement (a shortcut that declines has run nothing, and the
 * driver publishes the statement), so a synchronous SQLite statement publishes `start` and `end` together, its
 * `startTime` read before it ran.
 */
function tracedDirect (direct: DirectExecutor, dialect: StatementDialect): DirectExecutor {
  return (compiled) => {
    if (!statementChannel.hasSubscribers) return direct(compiled)
    const startTime = performance.now()
    let result: ReturnType<DirectExecutor>
    try {
      result = direct(compiled)
    } catch (error) {
      const context = contextOf(compiled, dialect, true, startTime)
      if (context !== undefined) failed(context, error, false)
      throw error
    }
    if (result === undefined) return undefined
    const context = contextOf(compiled, dialect, true, startTime)
    if (context === undefined) return result
    statementChannel.start.publish(context)
    if (!(result instanceof Promise)) {
      context.rows = rowsOf(result)
      statementChannel.end.publish(context)
      return result
    }
    context.pending = true
    statementChannel.end.publish(context)
    return result.then((answered: DirectResult) => {
      context.rows = rowsOf(answered)
      statementChannel.asyncStart.publish(context)
      statementChannel.asyncEnd.publish(context)
      return answered
    }, (error: unknown) => failed(context, error, true))
  }
}

/** Publishes a statement's failure: `start` first when it was not published yet. */
function failed (context: StatementContext, error: unknown, started: boolean): never {
  context.error = error
  if (!started) statementChannel.start.publish(context)
  statementChannel.error.publish(context)
  if (started) {
    statementChannel.asyncStart.publish(context)
    statementChannel.asyncEnd.publish(context)
  } else {
    statementChannel.end.publish(context)
  }
  throw error
}

const traced = new WeakSet<DatabaseConnection>()

/** A connection whose `executeQuery` publishes each statement: set on the connection itself, as Kysely's own log does,
 * since the driver releases the very connection it handed out. */
function traceConnection (connection: DatabaseConnection, dialect: StatementDialect): DatabaseConnection {
  if (traced.has(connection)) return connection
  traced.add(connection)
  const executeQuery = connection.executeQuery.bind(connection)
  connection.executeQuery = async <R>(compiled: CompiledQuery): Promise<QueryResult<R>> => {
    const context = statementChannel.hasSubscribers
      ? contextOf(compiled, dialect, false, performance.now())
      : undefined
    if (context === undefined) return await executeQuery<R>(compiled)
    return await traceEventually(statementChannel, context, async () => await executeQuery<R>(compiled), (result) => {
      context.rows = rowsOf(result)
    })
  }
  return connection
}

/** A dialect whose driver's connections publish their statements. */
function tracedDialect (dialect: Dialect, name: StatementDialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: (): Driver => {
      const driver = dialect.createDriver()
      return {
        init: async () => { await driver.init() },
        acquireConnection: async () => traceConnection(await driver.acquireConnection(), name),
        beginTransaction: async (connection, settings) => { await driver.beginTransaction(connection, settings) },
        commitTransaction: async (connection) => { await driver.commitTransaction(connection) },
        rollbackTransaction: async (connection) => { await driver.rollbackTransaction(connection) },
        releaseConnection: async (connection) => { await driver.releaseConnection(connection) },
        destroy: async () => { await driver.destroy() },
      }
    },
  }
}

/** Which database a URL scheme opens, as the statement channel names it. */
export function statementDialectOf (scheme: string): StatementDialect {
  if (scheme.startsWith('postgres')) return 'postgres'
  if (scheme === 'mysql' || scheme === 'mariadb') return 'mysql'
  return 'sqlite'
}

/**
 * A database a connector opened, its statements published on `fastify-viewsets:statement` (channels.ts): called by
 * createDatabase.
 *
 * @example
 * ```ts
 * const { dialect, direct } = tracedDatabase(connector.connect(url, settings), 'postgres')
 * ```
 */
export function tracedDatabase (opened: OpenedDatabase, name: StatementDialect): OpenedDatabase {
  return {
    dialect: tracedDialect(opened.dialect, name),
    direct: opened.direct === undefined ? undefined : tracedDirect(opened.direct, name),
    transact: untraced(opened.transact),
  }
}

/** A synchronous transaction's statements are not published one by one: while anything listens, writes take
 * Kysely's transactions. */
function untraced (transact: SyncTransaction | undefined): SyncTransaction | undefined {
  return transact === undefined ? undefined : (work) => statementChannel.hasSubscribers ? undefined : transact(work)
}

/** A user's database adopted by withPreparedStatements, its shortcut's statements published (the rest run on the
 * user's own driver, not traced). */
export function tracedAdopted (adopted: AdoptedDatabase, name: StatementDialect): AdoptedDatabase {
  const { direct, viaKysely, transact } = adopted
  return { direct: tracedDirect(direct, name), viaKysely, transact: untraced(transact) }
}
