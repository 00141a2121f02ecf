import type { CatalogColumn } from '../dialect/shared/catalog.js'
import type { ColumnMapping } from './column-types.js'
import { aliases, mapColumn } from './column-types.js'
import type { GeneratePlan } from './plan.js'
import type { TableIdentifier } from './naming.js'
import { commentText, pascal, propertyKey, renamedComment } from './naming.js'

/** Whether the database fills the column when an insert omits it. */
export function hasDefault (column: CatalogColumn): boolean {
  return column.default !== undefined || column.autoIncrement || column.generated
}

function kyselyType (column: CatalogColumn, mapping: ColumnMapping): string {
  const nullable = column.nullable ? ' | null' : ''
  if (column.generated) return `GeneratedAlways<${mapping.selected}${nullable}>`
  const type = `${mapping.kysely}${nullable}`
  return column.default !== undefined || column.autoIncrement ? `Generated<${type}>` : type
}

/** The identifier of a table the plan names. */
export function identifierOf (plan: GeneratePlan, table: string): TableIdentifier {
  return plan.identifiers.get(table) ?? { identifier: pascal(table) }
}

/**
 * db.ts: the Kysely `DB` interface, one `Pascal(table)Table` interface per table, typed as
 * createDatabase's drivers return values (see the aliases).
 */
export function writeDatabaseTypes (plan: GeneratePlan): string {
  const used = new Set<string>()
  const interfaces: string[] = []
  let generatedAlways = false
  for (const table of plan.tables) {
    const lines = table.columns.map((column) => {
      const mapping = mapColumn(plan.dialect, column)
      for (const alias of Object.keys(aliases)) if (new RegExp(`\\b${alias}\\b`).test(mapping.kysely)) used.add(alias)
      if (column.generated) generatedAlways = true
      return `  ${propertyKey(column.name)}: ${kyselyType(column, mapping)}`
    })
    const kind = table.view ? 'view' : 'table'
    const id = identifierOf(plan, table.name)
    interfaces.push(
      [
        ...renamedComment(table.name, id),
        `/** The ${kind} ${commentText(table.name)}. */`,
        `export interface ${id.identifier}Table {`,
        ...lines,
        '}',
      ].join('\n')
    )
  }
  const kyselyImports = ['ColumnType', ...(generatedAlways ? ['GeneratedAlways'] : [])]
  const db = plan.tables.map(
    (table) => `  ${propertyKey(table.name)}: ${identifierOf(plan, table.name).identifier}Table`
  )
  return [
    `import type { ${kyselyImports.join(', ')} } from 'kysely'`,
    '',
    '/** A column the database fills when an insert omits it (a default, an identity, an auto-increment). */',
    'export type Generated<T> =',
    '  T extends ColumnType<infer S, infer I, infer U> ? ColumnType<S, I | undefined, U> ' +
      ': ColumnType<T, T | undefined, T>',
    ...Object.entries(aliases).filter(([name]) => used.has(name)).map(([, declaration]) => `\n${declaration}`),
    '',
    ...interfaces.flatMap((block) => [block, '']),
    '/** The database, for `createDatabase<DB>()` and `Kysely<DB>`. */',
    `export interface DB {\n${db.join('\n')}\n}`,
    '',
  ].join('\n')
}
