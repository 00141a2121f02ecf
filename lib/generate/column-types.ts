import type { CatalogColumn } from '../dialect/shared/catalog.js'
import type { ColumnKind } from '../dialect/shared/column-types.js'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { columnTypesOf } from '../dialect/pick-dialect.js'
import { literal } from './naming.js'

/** Which database the code is generated for: the catalog's dialect. */
export type DialectName = ViewsetDialect['name']

export type { ColumnKind }

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
  Int8: '/** pg returns int8 as a string, so that no digit is lost. */\n' +
    'export type Int8 = ColumnType<string, bigint | number | string, bigint | number | string>',
  Numeric: '/** NUMERIC / DECIMAL arrive as strings from pg and mysql2; numbers are accepted on writes. */\n' +
    'export type Numeric = ColumnType<string, number | string, number | string>',
  Timestamp: '/** Dates arrive as Date objects; RFC 3339 strings are accepted on writes. */\n' +
    'export type Timestamp = ColumnType<Date, Date | string, Date | string>',
  Json: '/** JSON columns arrive parsed. */\nexport type Json = JsonValue\n' +
    'export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }',
}

/** A TypeBox expression, given its options. */
type TypeBoxCall = (options: readonly string[]) => string

function call (name: string): TypeBoxCall {
  return (options) => `Type.${name}(${options.length === 0 ? '' : `{ ${options.join(', ')} }`})`
}

/** The Kysely type, selected type, TypeBox call and options a kind maps to before the driver's own answers. */
function kindTypes (
  kind: ColumnKind,
  column: CatalogColumn
): { kysely: string, selected: string | undefined, typebox: TypeBoxCall, options: string[] } {
  const options: string[] = []
  let kysely: string
  let selected: string | undefined
  let typebox = call('String')
  switch (kind) {
    case 'integer': kysely = 'number'; typebox = call('Integer'); break
    case 'bigint':
      kysely = 'number'
      typebox = call('Integer')
      options.push('minimum: -9007199254740991', 'maximum: 9007199254740991')
      break
    case 'number': kysely = 'number'; typebox = call('Number'); break
    case 'decimal':
      kysely = 'Numeric'
      selected = 'string'
      typebox = call('Number')
      break
    case 'boolean': kysely = 'boolean'; typebox = call('Boolean'); break
    case 'uuid': kysely = 'string'; options.push("format: 'uuid'"); break
    case 'date-time':
    case 'date':
      kysely = 'Timestamp'
      selected = 'Date'
      options.push(`format: '${kind}'`)
      break
    case 'json':
      kysely = 'Json'
      selected = 'JsonValue'
      typebox = call('Unknown')
      break
    case 'enum': {
      const values = column.enumValues ?? []
      kysely = values.map(literal).join(' | ')
      typebox = (extra) =>
        `Type.Union([${values.map((value) => `Type.Literal(${literal(value)})`).join(', ')}]` +
        `${extra.length === 0 ? '' : `, { ${extra.join(', ')} }`})`
      break
    }
    case 'binary': kysely = 'Buffer'; break
    default: kysely = 'string'
  }
  return { kysely, selected, typebox, options }
}

/** Maps a catalog column to its Kysely type and TypeBox schema, as createDatabase's drivers return its values. */
export function mapColumn (dialect: DialectName, column: CatalogColumn): ColumnMapping {
  const types = columnTypesOf(dialect)
  const kind: ColumnKind =
    column.enumValues !== undefined && column.enumValues.length > 0 ? 'enum' : types.kindOf(column)
  const array = types.arrays && column.type.startsWith('_')
  const driver = types.driverTypes[kind]
  let { kysely, selected, typebox, options } = kindTypes(kind, column)
  // The database's driver answers some kinds in other types (see lib/dialect/<db>-column-types.ts).
  if (driver !== undefined) {
    kysely = driver.kysely
    selected = driver.selected
    if (driver.typebox !== undefined) typebox = call(driver.typebox)
  }
  if (column.maxLength !== undefined && kind === 'string') options.push(`maxLength: ${column.maxLength}`)
  if (array) {
    const element = typebox
    const elementOptions = [...options]
    typebox = (extra) =>
      `Type.Array(${element(elementOptions)}${extra.length === 0 ? '' : `, { ${extra.join(', ')} }`})`
    options.length = 0
    kysely = `Array<${selected ?? kysely}>`
    selected = kysely
  }
  const converted = array ? undefined : types.converted[kind]
  return { kind, kysely, selected: selected ?? kysely, typebox, options, array, converted }
}
