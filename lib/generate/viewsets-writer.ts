import type { CatalogColumn } from '../dialect/shared/catalog.js'
import type { ColumnKind } from './column-types.js'
import { mapColumn } from './column-types.js'
import type { GeneratePlan, PlannedRelation, ServedTable } from './plan.js'
import { literal, pascal, propertyKey, routeSegment } from './naming.js'

// LIST's own query parameters: a filter on a column of that name would collide with them.
const reserved = new Set(['limit', 'offset', 'search', 'order_by', 'count', 'fields'])
const operators: Partial<Record<ColumnKind, readonly string[]>> = {
  integer: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in'],
  bigint: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'],
  decimal: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'],
  'date-time': ['eq', 'gt', 'gte', 'lt', 'lte'],
  date: ['eq', 'gt', 'gte', 'lt', 'lte'],
  string: ['eq', 'ne', 'in', 'contains'],
  uuid: ['eq', 'in'],
  enum: ['eq', 'ne', 'in'],
  boolean: ['eq'],
}

function list (values: readonly string[]): string {
  return `[${values.map(literal).join(', ')}]`
}

function relationEntry (relation: PlannedRelation): string {
  const parts = [`table: ${literal(relation.table)}`]
  if (relation.foreignKey !== undefined) parts.push(`foreignKey: ${literal(relation.foreignKey)}`)
  if (relation.through !== undefined) {
    const { table, sourceKey, targetKey } = relation.through
    parts.push(
      `through: { table: ${literal(table)}, sourceKey: ${literal(sourceKey)}, targetKey: ${literal(targetKey)} }`
    )
  }
  if (relation.references !== undefined) parts.push(`references: ${literal(relation.references)}`)
  return `${propertyKey(relation.name)}: { ${parts.join(', ')} }`
}

function relationField (relation: PlannedRelation): string {
  const target = pascal(relation.table)
  // `nullable` rather than a union with null: the serializer validates each member of a union against
  // the row, and values as drivers return them (SQLite's 0/1 booleans, pg's Date objects, numeric
  // strings) would fail it and answer 500.
  const type =
    relation.kind === 'many-to-one'
      ? `Type.Unsafe<${target} | null>({ ...${target}, nullable: true })`
      : `Type.Array(${target})`
  return `  ${propertyKey(relation.name)}: Type.Optional(${type}),`
}

/** LIST options from the catalog: text columns are searched, indexed columns sort, and every scalar filters by type. */
function listOptions (served: ServedTable, dialect: GeneratePlan['dialect']): string[] {
  const scalar = (column: CatalogColumn) => {
    const mapping = mapColumn(dialect, column)
    return mapping.array || mapping.kind === 'json' || mapping.kind === 'binary' ? undefined : mapping.kind
  }
  const columns = served.catalog.columns
  const search = columns.filter((column) => scalar(column) === 'string').map((column) => column.name)
  const indexed = new Set([
    served.primaryKey,
    ...served.catalog.indexes.map((index) => index[0]).filter((name) => name !== undefined),
  ])
  const ordering = columns
    .filter((column) => indexed.has(column.name) && scalar(column) !== undefined)
    .map((column) => column.name)
  const filters = columns.flatMap((column) => {
    const kind = scalar(column)
    const allowed = kind === undefined ? undefined : operators[kind]
    if (allowed === undefined || reserved.has(column.name)) return []
    return [`      ${propertyKey(column.name)}: ${list(column.nullable ? [...allowed, 'isnull'] : allowed)},`]
  })
  const lines: string[] = []
  if (search.length > 0) lines.push(`    searchFields: ${list(search)},`)
  if (ordering.length > 0) lines.push(`    orderingFields: ${list(ordering)},`)
  if (filters.length > 0) lines.push('    filterFields: {', ...filters, '    },')
  return lines
}

/** viewsets.ts: a resource schema per table with relations, and `registerAll`, which serves every table. */
export function writeViewsets (plan: GeneratePlan): string {
  const imported = new Set<string>()
  const resources: string[] = []
  const registrations: string[] = []
  for (const served of plan.served) {
    const { catalog, primaryKey, relations } = served
    const base = pascal(catalog.name)
    imported.add(base)
    let schema = base
    if (relations.length > 0) {
      schema = `${base}Resource`
      for (const relation of relations) imported.add(pascal(relation.table))
      const described = relations.map((relation) => `${relation.name} (${relation.kind})`).join(', ')
      resources.push(
        [
          `/** ${literal(catalog.name)} with its relations, loaded in batches when a client asks for them: ${described}. */`,
          `export const ${schema} = Type.Object({`,
          `  ...${base}.properties,`,
          ...relations.map(relationField),
          '})',
          '',
        ].join('\n')
      )
    }
    const selectRelated = relations.filter((relation) => relation.kind === 'many-to-one').map(relationEntry)
    const prefetchRelated = relations.filter((relation) => relation.kind !== 'many-to-one').map(relationEntry)
    const related: string[] = []
    if (selectRelated.length > 0) {
      related.push('      selectRelated: {', ...selectRelated.map((entry) => `        ${entry},`), '      },')
    }
    if (prefetchRelated.length > 0) {
      related.push('      prefetchRelated: {', ...prefetchRelated.map((entry) => `        ${entry},`), '      },')
    }
    registrations.push(
      [
        '  await app.register(createViewset({',
        '    db,',
        `    table: ${literal(catalog.name)},`,
        `    schema: ${schema},`,
        ...(primaryKey === 'id' && !catalog.view ? [] : [`    primaryKey: ${literal(primaryKey)},`]),
        ...(catalog.view ? ["    methods: ['LIST', 'GET'],"] : []),
        `    tags: [${literal(routeSegment(catalog.name))}],`,
        ...listOptions(served, plan.dialect),
        ...(related.length === 0 ? [] : ['    relatedConfig: {', ...related, '    },']),
        `  }), { prefix: \`\${prefix}/${routeSegment(catalog.name)}\` })`,
      ].join('\n')
    )
  }
  const skipped = plan.skipped.map(({ table, reason }) => `//   ${table}: ${reason}`)
  return [
    ...(resources.length > 0 ? ["import { Type } from '@sinclair/typebox'"] : []),
    "import type { FastifyInstance } from 'fastify'",
    "import type { Kysely } from 'kysely'",
    "import { createViewset } from 'fastify-viewsets'",
    "import type { DB } from './db.js'",
    ...(imported.size > 0 ? [`import { ${[...imported].sort().join(', ')} } from './schemas.js'`] : []),
    '',
    ...resources,
    ...(skipped.length > 0 ? ['// Not served:', ...skipped, ''] : []),
    '/** Options of {@link registerAll}. */',
    'export interface RegisterAllOptions {',
    "  /** Put before every table's path, such as `/api` (default: none). */",
    '  prefix?: string',
    '}',
    '',
    '/**',
    ' * Registers a viewset for each table, under `/<table>` after the prefix.',
    ...(plan.links.length > 0
      ? [` * Link tables serve as the \`through\` of many-to-many relations: ${plan.links.join(', ')}.`]
      : []),
    ' *',
    ' * @example',
    ' * ```ts',
    " * await registerAll(app, createDatabase<DB>(), { prefix: '/api' })",
    ' * ```',
    ' */',
    "export async function registerAll (app: FastifyInstance, db: Kysely<DB>, { prefix = '' }: RegisterAllOptions = {}): Promise<void> {",
    registrations.join('\n'),
    '}',
    '',
  ].join('\n')
}
