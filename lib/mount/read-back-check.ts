import type { ViewsetDialect } from '../dialect/dialect.js'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import type { ViewsetMethod } from '../options.js'
import type { RowKey } from '../row-key.js'

// MySQL has no RETURNING: it finds a new row by its AUTO_INCREMENT key, or by the key the handler set. A key
// that is neither could never be read back, and every POST would fail: said at startup, not in a request.

/** What the check reads of a viewset's declaration. */
export interface ReadBackDeclaration {
  readonly key: RowKey
  /** The handlers and hooks the viewset overrides, `beforeWrite` counted when given as an option. */
  readonly overridden: ReadonlySet<string>
}

/**
 * The problem of a MySQL/MariaDB viewset that registers the default POST or BULK over a primary key that is
 * not AUTO_INCREMENT and that nothing sets (the key is read-only in the schema, and no `beforeWrite` option or
 * overridden `beforeWrite`, `createElement` or `createElements` sets it), or `undefined`.
 *
 * @example
 * readBackProblem(mysqlDialect, described, { key: new RowKey(['code']), overridden }, ['POST']) // '"code" of …'
 */
export function readBackProblem (
  dialect: ViewsetDialect,
  table: TableCatalog,
  { key: rowKey, overridden }: ReadBackDeclaration,
  methods: readonly ViewsetMethod[]
): string | undefined {
  // A composite key's parts are sent on POST (or set by the database's defaults): a new row is found by them.
  if (dialect.name !== 'mysql' || table.view || overridden.has('beforeWrite') || rowKey.composite) return undefined
  const primaryKey = rowKey.first
  const key = table.columns.find((column) => column.name === primaryKey)
  if (key === undefined || key.autoIncrement) return undefined
  const handlers = methods.flatMap((method) => {
    if (method === 'POST' && !overridden.has('createElement')) return ['createElement']
    if (method === 'BULK' && !overridden.has('createElements')) return ['createElements']
    return []
  })
  if (handlers.length === 0) return undefined
  const registered = handlers.map((handler) => (handler === 'createElement' ? 'POST' : 'BULK')).join(' and ')
  return `"${primaryKey}" of "${table.name}" is not AUTO_INCREMENT, and the default ${registered} cannot set it ` +
    '(it is read-only), so MySQL could not read a new row back; make it AUTO_INCREMENT, set it in beforeWrite, ' +
    `override ${handlers.join(' and ')}, or leave ${registered} out of methods`
}
