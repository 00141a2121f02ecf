import type { CatalogColumn, TableCatalog } from '../dialect/shared/catalog.js'
import type { DialectName } from './column-types.js'
import { mapColumn } from './column-types.js'
import { hasDefault, identifierOf } from './db-writer.js'
import type { GeneratePlan } from './plan.js'
import { commentText, propertyKey, renamedComment } from './naming.js'
import { secretColumns, secretWordList } from './secrets.js'
import { docComment } from './viewsets-writer.js'

// Defaults that stamp the time of the write: the server owns such columns (created_at).
const timeFunction = new RegExp(
  String.raw`\b(?:now|current_timestamp|current_date|current_time|localtimestamp|localtime|statement_timestamp|` +
    String.raw`transaction_timestamp|clock_timestamp|strftime|datetime|julianday|utc_timestamp|sysdate)\b`,
  'i'
)

/** Whether the server sets the column, not clients: keys, identity and generated columns, time-stamped defaults. */
export function isServerSet (
  table: TableCatalog, column: CatalogColumn, primaryKey: string | readonly string[] | undefined
): boolean {
  // A composite key's parts are the client's (a link's two ends), unless the database fills them as below.
  const key = typeof primaryKey === 'string' ? primaryKey : primaryKey?.length === 1 ? primaryKey[0] : undefined
  // A view is read only: its viewset serves LIST and GET.
  return (
    table.view ||
    column.name === key ||
    column.autoIncrement ||
    column.generated ||
    timeFunction.test(column.default ?? '')
  )
}

/** The TypeBox property of one column; `undefined` for a column JSON cannot carry (binary). */
export function columnSchema (
  dialect: DialectName,
  table: TableCatalog,
  column: CatalogColumn,
  primaryKey: string | readonly string[] | undefined
): string | undefined {
  const mapping = mapColumn(dialect, column)
  if (mapping.kind === 'binary') return undefined
  const readOnly = isServerSet(table, column, primaryKey)
  let schema: string
  if (column.nullable && mapping.converted !== undefined) {
    schema = `Type.Unsafe<${mapping.converted} | null>(` +
      `${mapping.typebox([...mapping.options, 'nullable: true', ...(readOnly ? ['readOnly: true'] : [])])})`
  } else if (column.nullable) {
    const inner = mapping.typebox(mapping.options)
    // An enum's literals and null make one flat union, which reads as one `enum` in OpenAPI.
    const members = mapping.kind === 'enum' && !mapping.array ? inner.replace(/^Type\.Union\(\[(.*)\]\)$/, '$1') : inner
    schema = `Type.Union([${members}, Type.Null()]${readOnly ? ', { readOnly: true }' : ''})`
  } else {
    schema = mapping.typebox([...mapping.options, ...(readOnly ? ['readOnly: true'] : [])])
  }
  const required = !column.nullable && !hasDefault(column) && !readOnly
  const comment =
    mapping.kind === 'bigint'
      ? '  // 8-byte integer: exact up to ±(2^53−1); for larger values, use Type.String() here.\n'
      : ''
  return `${comment}  ${propertyKey(column.name)}: ${required ? schema : `Type.Optional(${schema})`},`
}

/** schemas.ts: one TypeBox object per table, sharing its name with its `Static` type. */
export function writeSchemas (plan: GeneratePlan): string {
  const keys = new Map(plan.served.map((table) => [table.catalog.name, table.key]))
  const blocks = plan.tables
    .filter((table) => !plan.links.includes(table.name) || keys.has(table.name))
    .map((table) => {
      const primaryKey = keys.get(table.name) ?? (table.primaryKey.length === 1 ? table.primaryKey[0] : undefined)
      const secrets = new Set(secretColumns(table, plan.includeSecrets))
      const properties = table.columns
        .filter((column) => !secrets.has(column.name))
        .map((column) => columnSchema(plan.dialect, table, column, primaryKey))
        .filter((line) => line !== undefined)
      const skipped = table.columns
        .filter((column) => mapColumn(plan.dialect, column).kind === 'binary')
        .map((column) => column.name)
      const id = identifierOf(plan, table.name)
      const name = id.identifier
      const left = skipped.length === 0
        ? ''
        : ` (binary columns, which JSON cannot carry, are left out: ${skipped.map(commentText).join(', ')})`
      const hidden = secrets.size === 0
        ? ''
        : ` Left out as secret-looking (a name holding ${secretWordList}; --include-secrets keeps them): ` +
          `${[...secrets].map(commentText).join(', ')}.`
      return [
        ...renamedComment(table.name, id),
        docComment(`A row of ${commentText(table.name)}${left}.${hidden}`),
        `export const ${name} = Type.Object({`,
        ...properties,
        '})',
        `export type ${name} = Static<typeof ${name}>`,
        '',
      ].join('\n')
    })
  const note = plan.tables.some((table) =>
    table.columns.some((column) => column.nullable && mapColumn(plan.dialect, column).converted !== undefined)
  )
    ? [
        '// `Type.Unsafe<T | null>(Type.X({ nullable: true }))` marks nullable columns whose values ' +
          'the driver returns in',
        '// another type than JSON (numeric strings, Date objects, 0/1): the serializer converts them, ' +
          'where a union with',
        '// null would first validate them and fail.',
        '',
      ]
    : []
  return [
    "import { Type } from '@sinclair/typebox'",
    "import type { Static } from '@sinclair/typebox'",
    '',
    ...note,
    ...blocks,
  ].join('\n')
}
