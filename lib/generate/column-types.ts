import type { CatalogColumn } from '../dialect/catalog.js'
import { literal } from './naming.js'

export type DialectName = 'sqlite' | 'postgres' | 'mysql'

/** What a column holds, as the viewset serves it. */
export type ColumnKind = 'integer' | 'bigint' | 'number' | 'decimal' | 'boolean' | 'string' | 'uuid' | 'date-time' | 'date' | 'json' | 'enum' | 'binary'

/** How one column is written in db.ts and schemas.ts. */
export interface ColumnMapping {
  readonly kind: ColumnKind
  /** The Kysely column type in db.ts: a TypeScript type or one of the aliases db.ts declares. */
  readonly kysely: string
  /** The type a select returns, for `GeneratedAlways<>`. */
  readonly selected: string
  /** The TypeBox expression, given its options (`maxLength: 255`, `readOnly: true`). */
  readonly typebox: (options: readonly string[]) => string
  /** The TypeBox options the catalog gives (length, format). */
  readonly options: readonly string[]
  /** Arrays of this kind (PostgreSQL `int4[]`). */
  readonly array: boolean
  /**
   * The TypeScript type of the TypeBox schema, when the driver returns another type than the JSON one
   * (numeric strings, Date objects, SQLite's 0/1): such a nullable column is written `nullable: true`.
   */
  readonly converted: string | undefined
}

/** The aliases db.ts declares when a column uses them: the types the drivers return through createDatabase. */
export const aliases: Record<string, string> = {
  Int8: '/** pg returns int8 as a string, so that no digit is lost. */\nexport type Int8 = ColumnType<string, bigint | number | string, bigint | number | string>',
  Numeric: '/** NUMERIC / DECIMAL arrive as strings from pg and mysql2; numbers are accepted on writes. */\nexport type Numeric = ColumnType<string, number | string, number | string>',
  Timestamp: '/** Dates arrive as Date objects; RFC 3339 strings are accepted on writes. */\nexport type Timestamp = ColumnType<Date, Date | string, Date | string>',
  Json: '/** JSON columns arrive parsed. */\nexport type Json = JsonValue\nexport type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }',
}

const sqliteDates: Record<string, ColumnKind> = { date: 'date', datetime: 'date-time', timestamp: 'date-time', timestamptz: 'date-time' }

// The kinds whose driver values are not the JSON type that the schema declares: the serializer
// converts them (fast-json-stringify), but it validates each member of a union first, so a union with
// null would reject them and answer 500.
const convertedTypes: Record<DialectName, Partial<Record<ColumnKind, string>>> = {
  sqlite: { boolean: 'boolean' },
  postgres: { bigint: 'number', decimal: 'number', 'date-time': 'string', date: 'string' },
  mysql: { decimal: 'number', 'date-time': 'string', date: 'string' },
}

function call (name: string): (options: readonly string[]) => string {
  return (options) => `Type.${name}(${options.length === 0 ? '' : `{ ${options.join(', ')} }`})`
}

/** The kind of a column, from its catalog type, as the dialect's driver returns it. */
function kindOf (dialect: DialectName, column: CatalogColumn): ColumnKind {
  const type = column.type
  if (column.enumValues !== undefined && column.enumValues.length > 0) return 'enum'
  if (dialect === 'postgres') {
    const postgres: Record<string, ColumnKind> = {
      int2: 'integer', int4: 'integer', int8: 'bigint', float4: 'number', float8: 'number', numeric: 'decimal', money: 'string',
      bool: 'boolean', uuid: 'uuid', timestamptz: 'date-time', timestamp: 'date-time', date: 'date', json: 'json', jsonb: 'json', bytea: 'binary',
    }
    return postgres[type.replace(/^_/, '')] ?? 'string'
  }
  if (dialect === 'mysql') {
    if (column.json) return 'json'
    if (column.declared.startsWith('tinyint(1)') || type === 'boolean') return 'boolean'
    const mysql: Record<string, ColumnKind> = {
      tinyint: 'integer', smallint: 'integer', mediumint: 'integer', int: 'integer', integer: 'integer', year: 'integer', bigint: 'bigint',
      float: 'number', double: 'number', real: 'number', decimal: 'decimal', numeric: 'decimal',
      datetime: 'date-time', timestamp: 'date-time', date: 'date',
      binary: 'binary', varbinary: 'binary', blob: 'binary', tinyblob: 'binary', mediumblob: 'binary', longblob: 'binary', bit: 'binary',
    }
    return mysql[type] ?? 'string'
  }
  // SQLite: the column's affinity (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
  if (type.includes('bool')) return 'boolean'
  const date = sqliteDates[type]
  if (date !== undefined) return date
  if (type === 'bigint' || type === 'int8' || type === 'unsigned big int') return 'bigint'
  if (type.includes('int')) return 'integer'
  if (/char|clob|text/.test(type)) return 'string'
  if (type.includes('blob')) return 'binary'
  if (/real|floa|doub|numeric|decimal/.test(type)) return 'number'
  return 'string'
}

/** Maps a catalog column to its Kysely type and TypeBox schema, as createDatabase's drivers return its values. */
export function mapColumn (dialect: DialectName, column: CatalogColumn): ColumnMapping {
  const kind = kindOf(dialect, column)
  const array = dialect === 'postgres' && column.type.startsWith('_')
  const options: string[] = []
  let kysely: string
  let selected: string | undefined
  let typebox = call('String')
  switch (kind) {
    case 'integer': kysely = 'number'; typebox = call('Integer'); break
    case 'bigint':
      kysely = dialect === 'postgres' ? 'Int8' : 'number'
      selected = dialect === 'postgres' ? 'string' : 'number'
      typebox = call('Integer')
      options.push('minimum: -9007199254740991', 'maximum: 9007199254740991')
      break
    case 'number': kysely = 'number'; typebox = call('Number'); break
    case 'decimal':
      kysely = dialect === 'sqlite' ? 'number' : 'Numeric'
      selected = dialect === 'sqlite' ? 'number' : 'string'
      typebox = call('Number')
      break
    // SQLite has no boolean: 0 and 1 come back, and the viewset serves them as false and true.
    case 'boolean': kysely = dialect === 'sqlite' ? 'number' : 'boolean'; typebox = call('Boolean'); break
    case 'uuid': kysely = 'string'; options.push("format: 'uuid'"); break
    case 'date-time':
    case 'date':
      kysely = dialect === 'sqlite' ? 'string' : 'Timestamp'
      selected = dialect === 'sqlite' ? 'string' : 'Date'
      options.push(`format: '${kind}'`)
      break
    // SQLite keeps JSON as text, and better-sqlite3 returns it as a string.
    case 'json':
      kysely = dialect === 'sqlite' ? 'string' : 'Json'
      selected = dialect === 'sqlite' ? 'string' : 'JsonValue'
      typebox = dialect === 'sqlite' ? call('String') : call('Unknown')
      break
    case 'enum': {
      const values = column.enumValues ?? []
      kysely = values.map(literal).join(' | ')
      typebox = (extra) => `Type.Union([${values.map((value) => `Type.Literal(${literal(value)})`).join(', ')}]${extra.length === 0 ? '' : `, { ${extra.join(', ')} }`})`
      break
    }
    case 'binary': kysely = 'Buffer'; break
    default: kysely = 'string'
  }
  if (column.maxLength !== undefined && kind === 'string') options.push(`maxLength: ${column.maxLength}`)
  if (array) {
    const element = typebox
    const elementOptions = [...options]
    typebox = (extra) => `Type.Array(${element(elementOptions)}${extra.length === 0 ? '' : `, { ${extra.join(', ')} }`})`
    options.length = 0
    kysely = `Array<${selected ?? kysely}>`
    selected = kysely
  }
  const converted = array ? undefined : convertedTypes[dialect][kind]
  return { kind, kysely, selected: selected ?? kysely, typebox, options, array, converted }
}
