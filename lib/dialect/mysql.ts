import { sql } from 'kysely'
import type { DatabaseFault, Row, ViewsetDialect } from './dialect.js'
import { errorProperty, isConnectionError, sameValue } from './dialect.js'

// MySQL has no RETURNING and MariaDB has none on UPDATE: write, then read back in the same transaction.
// Server error numbers: https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html
const constraintKinds: Record<string, 'unique' | 'foreign-key' | 'not-null' | 'check'> = {
  1062: 'unique',
  1451: 'foreign-key',
  1452: 'foreign-key',
  1216: 'foreign-key',
  1217: 'foreign-key',
  1048: 'not-null',
  1364: 'not-null',
  3819: 'check',
  4025: 'check',
}
const invalidValues: Record<string, string> = {
  1406: 'a string is longer than the column allows',
  1264: 'a number is out of the range of the column',
  1292: 'a value has the wrong format for its column',
  1366: 'a value has the wrong format for its column',
  1365: 'division by zero',
}

/** MySQL and MariaDB through mysql2: write then read back, `information_schema`, LOWER() LIKE. */
export const mysqlDialect: ViewsetDialect = {
  name: 'mysql',

  parameter: sameValue,

  async columns (db, table) {
    const { rows } = await sql<{ name: string, type: string, nullable: string }>`
      select column_name as name, data_type as type, is_nullable as nullable from information_schema.columns
      where table_schema = database() and table_name = ${table} order by ordinal_position`.execute(db)
    return rows.map((row) => ({ name: row.name, type: row.type.toLowerCase(), nullable: row.nullable === 'YES' }))
  },

  async insert (db, { table, primaryKey, columns }, values) {
    return await db.transaction().execute(async (trx) => {
      const insert = trx.insertInto(table)
      const result = await (Object.keys(values).length === 0 ? insert.values({}) : insert.values(values)).executeTakeFirstOrThrow()
      const id = values[primaryKey] ?? result.insertId
      return await trx.selectFrom(table).select(columns).where(primaryKey, '=', id).executeTakeFirstOrThrow()
    })
  },

  async update (db, { table, primaryKey, columns }, id, values) {
    return await db.transaction().execute(async (trx): Promise<Row | undefined> => {
      if (Object.keys(values).length > 0) await trx.updateTable(table).set(values).where(primaryKey, '=', id).execute()
      const nextId = values[primaryKey] ?? id
      return await trx.selectFrom(table).select(columns).where(primaryKey, '=', nextId).executeTakeFirst()
    })
  },

  ilike (column, pattern) {
    return sql<boolean>`lower(${column}) like lower(${pattern}) escape '!'`
  },

  classify (error): DatabaseFault | undefined {
    const errno = errorProperty(error, 'errno')
    if (errno !== undefined) {
      const kind = constraintKinds[errno]
      if (kind !== undefined) {
        // "Duplicate entry 'x' for key 'items.name'": keep only the key's name, never the value.
        const message = errorProperty(error, 'sqlMessage') ?? ''
        const target = /for key '(?:[^'.]+\.)?([^']+)'/.exec(message)?.[1] ?? /Column '([^']+)'/.exec(message)?.[1] ?? /FOREIGN KEY \(`([^`]+)`\)/.exec(message)?.[1]
        return { kind, target }
      }
      const reason = invalidValues[errno]
      if (reason !== undefined) return { kind: 'invalid-value', reason }
      if (errno === '1040' || errno === '2006' || errno === '2013') return { kind: 'unavailable' }
    }
    return isConnectionError(error) ? { kind: 'unavailable' } : undefined
  },
}
