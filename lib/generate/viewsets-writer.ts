import type { CatalogColumn } from '../dialect/shared/catalog.js'
import type { ColumnKind } from './column-types.js'
import { mapColumn } from './column-types.js'
import type { PlannedFullText } from './full-text-option.js'
import type { GeneratePlan, PlannedRelation, ServedTable } from './plan.js'
import { identifierOf } from './db-writer.js'
import { commentLine, commentText, literal, propertyKey, renamedComment, routeSegment } from './naming.js'
import { requiredSecrets, secretColumns } from './secrets.js'

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

function relationField (plan: GeneratePlan, relation: PlannedRelation): string {
  const target = identifierOf(plan, relation.table).identifier
  // `nullable` rather than a union with null: the serializer validates each member of a union against
  // the row, and values as drivers return them (SQLite's 0/1 booleans, pg's Date objects, numeric
  // strings) would fail it and answer 500.
  const type =
    relation.kind === 'many-to-one'
      ? `Type.Unsafe<${target} | null>({ ...${target}, nullable: true })`
      : `Type.Array(${target})`
  return `  ${propertyKey(relation.name)}: Type.Optional(${type}),`
}

/** A `/** *\/` comment of `text` (already safe for a comment), wrapped at 120 characters as the linter wants. */
export function docComment (text: string, indent = ''): string {
  const lines: string[] = []
  let line = `${indent}/**`
  for (const word of text.split(' ')) {
    if (line.length + word.length + 4 > 120 && line.trim() !== '/**' && line.trim() !== '*') {
      lines.push(line)
      line = `${indent} *`
    }
    line += ` ${word}`
  }
  lines.push(`${line} */`)
  return lines.join('\n')
}

/**
 * LIST options from the catalog: text columns are searched, indexed columns sort, and every scalar filters by type.
 * Secret columns are left out; on a large table, so are substring matches (`search`, `contains`) and exact counts,
 * which no B-tree index serves.
 */
function listOptions (plan: GeneratePlan, served: ServedTable, fullText: PlannedFullText | undefined): string[] {
  const secrets = new Set(secretColumns(served.catalog, plan.includeSecrets))
  const large = plan.large.has(served.catalog.name)
  const scalar = (column: CatalogColumn) => {
    const mapping = mapColumn(plan.dialect, column)
    return mapping.array || mapping.kind === 'json' || mapping.kind === 'binary' || secrets.has(column.name)
      ? undefined
      : mapping.kind
  }
  const columns = served.catalog.columns
  const search = large ? [] : columns.filter((column) => scalar(column) === 'string').map((column) => column.name)
  const indexed = new Set([
    served.primaryKey,
    ...served.catalog.indexes.map((index) => index[0]).filter((name) => name !== undefined),
  ])
  const ordering = columns
    .filter((column) => indexed.has(column.name) && scalar(column) !== undefined)
    .map((column) => column.name)
  const filters = columns.flatMap((column) => {
    const kind = scalar(column)
    const allowed = (kind === undefined ? undefined : operators[kind])?.filter((op) => !large || op !== 'contains')
    // With full-text search, `q` is its parameter.
    if (allowed === undefined || reserved.has(column.name) || (fullText !== undefined && column.name === 'q')) return []
    return [`        ${propertyKey(column.name)}: ${list(column.nullable ? [...allowed, 'isnull'] : allowed)},`]
  })
  const lines: string[] = []
  if (search.length > 0) lines.push(`      searchFields: ${list(search)},`)
  if (ordering.length > 0) lines.push(`      orderingFields: ${list(ordering)},`)
  if (filters.length > 0) lines.push('      filterFields: {', ...filters, '      },')
  if (fullText !== undefined) lines.push(fullTextLine(fullText))
  if (large) {
    // SQLite has no planner estimate to answer instead: its count would scan the table.
    lines.push(`      allowCount: ${plan.dialect === 'sqlite' ? 'false' : "'estimated'"},`)
  }
  return lines
}

/** The `fullText` option of a table `--full-text` names (its migration is full-text.<dialect>.sql). */
function fullTextLine ({ fields, language }: PlannedFullText): string {
  const configured = language === 'simple' ? '' : `, language: ${literal(language)}`
  return `      fullText: { fields: ${list(fields)}${configured} },`
}

// A table whose name is not a plain word gets its identifier as the base of operationIds and component names,
// which the library would otherwise derive from the route prefix, where two such names can meet.
const plainName = /^[A-Za-z][A-Za-z0-9_]*$/

/** The resource schema of a table with relations: its row and the relation fields. */
function resourceSchema (plan: GeneratePlan, served: ServedTable, name: string): string {
  const { catalog, relations } = served
  const base = identifierOf(plan, catalog.name).identifier
  const described = relations.map((relation) => `${commentText(relation.name)} (${relation.kind})`).join(', ')
  return [
    docComment(`${commentText(catalog.name)} with its relations, ` +
      `loaded in batches when a client asks for them: ${described}.`),
    `export const ${name} = Type.Object({`,
    `  ...${base}.properties,`,
    ...relations.map((relation) => relationField(plan, relation)),
    '})',
    '',
  ].join('\n')
}

/** The `await app.register(createViewset(...))` of one table. */
function registration (
  plan: GeneratePlan,
  served: ServedTable,
  schema: string,
  fullText: PlannedFullText | undefined
): string {
  const { catalog, primaryKey, relations } = served
  const id = identifierOf(plan, catalog.name)
  const selectRelated = relations.filter((relation) => relation.kind === 'many-to-one').map(relationEntry)
  const prefetchRelated = relations.filter((relation) => relation.kind !== 'many-to-one').map(relationEntry)
  const related: string[] = []
  if (selectRelated.length > 0) {
    related.push('        selectRelated: {', ...selectRelated.map((entry) => `          ${entry},`), '        },')
  }
  if (prefetchRelated.length > 0) {
    related.push('        prefetchRelated: {', ...prefetchRelated.map((entry) => `          ${entry},`), '        },')
  }
  const named = id.renamed !== undefined || !plainName.test(catalog.name)
  // To-many relations load when `?fields=` names them: by default a GET costs one batched statement per to-one.
  const toOne = relations.filter((relation) => relation.kind === 'many-to-one').map((relation) => relation.name)
  const defaults = toOne.length === relations.length ? [] : [`      defaultRelations: ${list(toOne)},`]
  const unwritable = requiredSecrets(catalog, plan.includeSecrets)
  const methods = unwritable.length === 0
    ? 'methods'
    : "methods.filter((method) => method !== 'POST' && method !== 'BULK')"
  return [
    ...(unwritable.length === 0
      ? []
      : [docComment(`No POST: ${unwritable.map(commentText).join(', ')} (NOT NULL, no default) left out as ` +
          'secret-looking, so an insert could not set it; --include-secrets serves it.', '  ')]),
    '  await app.register(',
    '    createViewset({',
    '      db,',
    `      table: ${literal(catalog.name)},`,
    `      schema: ${schema},`,
    ...(served.key.length > 1
      ? [`      primaryKey: [${served.key.map(literal).join(', ')}],`]
      : primaryKey === 'id' && !catalog.view ? [] : [`      primaryKey: ${literal(primaryKey)},`]),
    catalog.view
      ? "      ...access(['LIST', 'GET'], protectedMethods),"
      : `      ...access(${methods}, protectedMethods),`,
    ...(named ? [`      name: ${literal(id.identifier)},`] : []),
    `      tags: [${literal(catalog.name)}],`,
    ...listOptions(plan, served, fullText),
    ...(related.length === 0 ? [] : ['      relatedConfig: {', ...related, '      },', ...defaults]),
    '    }),',
    `    { prefix: prefix + ${literal(`/${routeSegment(catalog.name)}`)} }`,
    '  )',
  ].join('\n')
}

/** A name for `base` + `suffix` that no table identifier takes (`books_resource` would take `BooksResource`). */
function freeName (plan: GeneratePlan, base: string, suffix: string): string {
  const taken = new Set([...plan.identifiers.values()].map((entry) => entry.identifier))
  let name = `${base}${suffix}`
  for (let number = 2; taken.has(name); number++) name = `${base}${suffix}${number}`
  return name
}

/** RegisterAllOptions, and how a table's methods follow from them. */
const registerAllOptions = [
  '/** Options of {@link registerAll}. */',
  'export interface RegisterAllOptions {',
  "  /** Put before every table's path, such as `/api` (default: none). */",
  '  prefix?: string',
  '  /** The methods of every table (default: all but BULK); a view serves LIST and GET only. */',
  '  methods?: readonly ViewsetMethod[]',
  '  /** The methods that need a bearer token (default: none); register @fastify/jwt before registerAll. */',
  '  protectedMethods?: readonly ViewsetMethod[]',
  '}',
  '',
  '/** The methods a table serves, and those of them that need a token. */',
  'function access (served: readonly ViewsetMethod[], protectedMethods: readonly ViewsetMethod[]) {',
  '  return { methods: served, protectedMethods: protectedMethods.filter((method) => served.includes(method)) }',
  '}',
  '',
]

/** The doc comment's lines naming the link tables. */
function linkLines (links: string): string[] {
  if (links === '') return []
  const comment = docComment('Link tables serve as the `through` of many-to-many relations, and by their ' +
    `composite key: ${links}.`)
  return [comment.replace(/^\/\*\*/, ' *').replace(/ \*\/$/, '')]
}

/**
 * viewsets.ts: a resource schema per table with relations, and `registerAll`, which serves every table (with `?q=` on
 * the tables `fullText` plans).
 */
export function writeViewsets (
  plan: GeneratePlan,
  fullText: ReadonlyMap<string, PlannedFullText> = new Map()
): string {
  const imported = new Set<string>()
  const resources: string[] = []
  const registrations: string[] = []
  for (const served of plan.served) {
    const id = identifierOf(plan, served.catalog.name)
    imported.add(id.identifier)
    let schema = id.identifier
    if (served.relations.length > 0) {
      schema = freeName(plan, id.identifier, 'Resource')
      for (const relation of served.relations) imported.add(identifierOf(plan, relation.table).identifier)
      resources.push(resourceSchema(plan, served, schema))
    }
    registrations.push(...renamedComment(served.catalog.name, id).map((line) => `  ${line}`))
    registrations.push(registration(plan, served, schema, fullText.get(served.catalog.name)))
  }
  const skipped = plan.skipped.map(({ table, reason }) => `//   ${commentText(table)}: ${commentLine(reason)}`)
  const links = plan.links.map(commentText).join(', ')
  return [
    ...(resources.length > 0 ? ["import { Type } from '@sinclair/typebox'"] : []),
    "import type { FastifyInstance } from 'fastify'",
    "import type { Kysely } from 'kysely'",
    "import { createViewset } from 'fastify-viewsets'",
    "import type { ViewsetMethod } from 'fastify-viewsets'",
    "import type { DB } from './db.js'",
    ...(imported.size > 0 ? [`import { ${[...imported].sort().join(', ')} } from './schemas.js'`] : []),
    '',
    ...resources,
    ...(skipped.length > 0 ? ['// Not served:', ...skipped, ''] : []),
    ...registerAllOptions,
    '/**',
    ' * Registers a viewset for each table, under `/<table>` after the prefix (a name with other characters than',
    ' * letters, digits, `_` and `-` has them written as their UTF-8 bytes, `~` and two hex digits each).',
    ...linkLines(links),
    ' *',
    ' * @example',
    ' * ```ts',
    " * await registerAll(app, createDatabase<DB>(), { prefix: '/api' })",
    ' * ```',
    ' */',
    'export async function registerAll (',
    '  app: FastifyInstance,',
    '  db: Kysely<DB>,',
    "  { prefix = '', methods = ['LIST', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'], protectedMethods = [] }" +
      ': RegisterAllOptions = {}',
    '): Promise<void> {',
    registrations.join('\n'),
    '}',
    '',
  ].join('\n')
}
