import { KeyPath } from '../http/key-path.js'
import type { RouteContext } from '../http/route-context.js'
import type { ResolvedOptions } from '../options.js'
import type { RowKey } from '../row-key.js'

/**
 * What the routes document and validate, from the planned entity and the options: with the row key, and a composite
 * key's path form (http/key-path.ts).
 *
 * @example
 * ```ts
 * const schemas = routeSchemas(resolved, key, { entity, serialized, name, components, list }, {})
 * ```
 */
export function routeSchemas (
  { tags, maxBulk, maxAffected, conflictFields }: ResolvedOptions,
  key: RowKey,
  planned: Pick<RouteContext['schemas'], 'entity' | 'serialized' | 'name' | 'components' | 'list'>,
  parentParams: RouteContext['schemas']['parentParams']
): RouteContext['schemas'] {
  const keyPath = key.composite ? new KeyPath(key, planned.entity) : undefined
  return { ...planned, primaryKey: key.first, key, keyPath, tags, maxBulk, maxAffected, conflictFields, parentParams }
}
