import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { partialMediaType, problemResponses } from '../schema/openapi.js'
import { isRecord } from '../schema/object-schema.js'
import type { RouteSchemas } from './route-context.js'

// What `changed_since` adds to LIST's route schema (issue 40, item 5): the query parameter, and the answer it gives,
// documented as the other member of a `oneOf` with the page of rows (a client tells them apart by type: an array or
// an object), plus its 410.

/** A position: `0`, or the `next` of an earlier answer (a history position: a BIGINT's digits). */
export const positionPattern = '^(?:0|[1-9][0-9]{0,18})$'

/** The `changed_since` query parameter of LIST. */
export const changedSinceParameter: JsonSchema = {
  type: 'string',
  pattern: positionPattern,
  description:
    'Answers the changes since this position instead of a page of rows: `{"changes": [rows], "deleted": [keys], ' +
    '"next": position}`. `0` for the beginning, then the `next` of the previous answer; repeat while the answer ' +
    'has a `Link` `rel="next"` (its `next` then equals the position sent once nothing follows). Filters, `search`, ' +
    '`fields` and `limit` (history entries per page) apply; `order_by`, `cursor`, `offset`, `count` and `q` do not. ' +
    'A position older than the retained history is a 410 FST_VIEWSET_POSITION_EXPIRED.',
  examples: ['0'],
}

/** LIST's query string with `changed_since`. */
export function withChangedSince (querystring: JsonSchema): JsonSchema {
  return { ...querystring, properties: { ...propertiesOf(querystring), changed_since: changedSinceParameter } }
}

/** A deleted key: an object of every column of the key (a composite key's parts by name), each as LIST serializes the
 * field (a BIGINT past 2^53 as its digits). */
function keySchema (schemas: RouteSchemas): JsonSchema {
  const properties = propertiesOf(schemas.entity)
  const columns = schemas.key.columns
  return {
    type: 'object',
    properties: Object.fromEntries(columns.map((column) => {
      const { readOnly: _readOnly, examples: _examples, ...property } = properties[column] ?? {}
      return [column, property]
    })),
    required: [...columns],
    additionalProperties: false,
  }
}

/** The answer to `changed_since`, its rows the `rows` schema (a whole row, or a partial one with `fields`). */
function changesSchema (schemas: RouteSchemas, rows: JsonSchema): JsonSchema {
  return {
    type: 'object',
    description: 'The rows changed since the position (each once, as it is now) and the keys deleted since',
    properties: {
      changes: { ...rows, description: 'The rows changed (created, updated, restored) that match, as they are now' },
      deleted: {
        type: 'array',
        items: keySchema(schemas),
        description: 'The keys of rows deleted, or no longer matching the filters or your rules, since the position',
      },
      next: { type: 'string', pattern: positionPattern, description: 'The position to ask from next time' },
    },
    required: ['changes', 'deleted', 'next'],
    additionalProperties: false,
  }
}

/**
 * Documents `changed_since` on LIST's route schema (`response`: LIST's responses, changed in place): each media type
 * of the 200 becomes `oneOf` its page of rows and the changes over those rows, and a 410 is added.
 */
export function documentChangesSince (response: Record<number, JsonSchema>, schemas: RouteSchemas): void {
  const ok = response[200]
  const content = isRecord(ok?.content) ? ok.content : undefined
  if (ok === undefined || content === undefined) return
  const documented: Record<string, JsonSchema> = {}
  for (const [type, media] of Object.entries(content)) {
    const page = isRecord(media) && isRecord(media.schema) ? media.schema : undefined
    if (page === undefined) continue
    const rows = { ...page }
    documented[type] = { schema: { oneOf: [page, changesSchema(schemas, rows)] } }
  }
  response[200] = {
    ...ok,
    description: `${String(ok.description)}; with \`changed_since\`, the changes since a position` +
      ` (as \`${partialMediaType}\` too with \`fields\`)`,
    content: documented,
  }
  Object.assign(response, problemResponses([410]))
}
