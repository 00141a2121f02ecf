import type { FastifyRequest } from 'fastify'
import type { RowKey } from '../row-key.js'
import type { Row } from '../sql.js'
import { invalidFields } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { exampleOf } from '../schema/components.js'

// A composite key in a URL: `{prefix}/{part1},{part2}`, the parts in the key's column order. The router decodes a
// path parameter before anything can split it, so a part's own comma (sent `%2C`) would split it too: the parts are
// cut from the raw path segment, then each is decoded. The element routes keep their one `:id` parameter (and every
// path that names it); their params schema is the parts', which Fastify validates and coerces as it does a single
// key (canonical integers, BIGINT as digits), and the document shows `/{book_id},{tag_id}` (docs.ts).

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On a composite key's element routes: the key's parts as the document spells the `:id` segment. */
    viewsetKeyTemplate?: string
  }
}

/** A route's composite key template (`config.viewsetKeyTemplate`, set by the element routes), if it has one. */
export function keyTemplateOf (config: unknown): string | undefined {
  return isRecord(config) && typeof config.viewsetKeyTemplate === 'string' ? config.viewsetKeyTemplate : undefined
}

/** The 400 of a path whose key is not one, answered as Fastify's own validation failures are. */
function keyPathError (message: string): Error {
  const validation = [{ instancePath: '/id', keyword: 'key', message, params: {}, schemaPath: '#' }]
  return Object.assign(new Error(`params/id ${message}`), {
    statusCode: 400, code: 'FST_ERR_VALIDATION', validation, validationContext: 'params',
  })
}

/** The raw (still encoded) path segment of the route's `:id`: `request.params.id` is already decoded. */
function rawSegment (request: FastifyRequest, decoded: string): string {
  const at = (request.routeOptions.url ?? '').split('/').indexOf(':id')
  const segment = request.url.split('?', 1)[0]?.split('/')[at]
  if (segment === undefined) return decoded
  try {
    // The router's value is the segment decoded: anything else (a rewritten URL) is read as the router read it.
    return decodeURIComponent(segment) === decoded ? segment : decoded
  } catch {
    return decoded
  }
}

/**
 * How a composite key travels in the element routes' path. Single-column keys need none of it: their `:id` is
 * validated and coerced by its params schema, as it always was.
 *
 * @example
 * ```ts
 * const path = new KeyPath(new RowKey(['book_id', 'tag_id']), entity)
 * path.template // ':book_id,:tag_id'
 * path.segment({ book_id: 1, tag_id: 'a,b' }) // '1,a%2Cb'
 * ```
 */
export class KeyPath {
  readonly key: RowKey
  /** The element routes' path segment as the document shows it (Fastify's spelling): `:book_id,:tag_id`. */
  readonly template: string
  /** The parts' path parameters, typed as the entity types their fields. */
  readonly params: Record<string, JsonSchema>

  constructor (key: RowKey, entity: JsonSchema) {
    this.key = key
    this.template = key.columns.map((column) => `:${column}`).join(',')
    const properties = propertiesOf(entity)
    this.params = Object.fromEntries(key.columns.map((column, index) => {
      const { readOnly: _readOnly, ...part } = properties[column] ?? { type: 'string' }
      const description = `Part ${String(index + 1)} of ${String(key.columns.length)} of the key (${column}), ` +
        'percent-encoded: a comma or slash inside it is sent as %2C or %2F.'
      return [column, { ...part, description }]
    }))
    Object.freeze(this)
  }

  /** The element routes' path parameters: each part (with an example), after a nested viewset's parent's. */
  paramsSchema (parentParams: Readonly<Record<string, JsonSchema>>): JsonSchema {
    const parts = Object.fromEntries(Object.entries(this.params).map(([name, part]) => {
      const example = exampleOf(part)
      return [name, example === undefined ? part : { ...part, examples: [example] }]
    }))
    const required = [...Object.keys(parentParams), ...this.key.columns]
    return { type: 'object', properties: { ...parentParams, ...parts }, required, additionalProperties: false }
  }

  /** The key in a row's URL segment: its parts, each percent-encoded, joined by commas. */
  segment (row: Row): string {
    return this.key.format(this.key.of(row))
  }

  /**
   * preValidation: the raw `:id` segment cut into the key's parts, each decoded, as the params the route validates;
   * a wrong number of parts is a 400 naming the key's form.
   */
  readonly split = async (request: FastifyRequest): Promise<void> => {
    const params = request.params
    if (!isRecord(params) || typeof params.id !== 'string') return
    const { columns } = this.key
    const parts = rawSegment(request, params.id).split(',')
    if (parts.length !== columns.length) {
      throw keyPathError(`must be the ${String(columns.length)} parts of the key (${columns.join(',')}), separated ` +
        `by commas, not ${String(parts.length)} (a comma inside a part is sent as %2C)`)
    }
    const decoded: Row = {}
    for (const [index, part] of parts.entries()) {
      try {
        decoded[columns[index] ?? ''] = decodeURIComponent(part)
      } catch {
        throw keyPathError(`part ${String(index + 1)} (${columns[index] ?? ''}) is not percent-encoded text`)
      }
    }
    delete params.id
    Object.assign(params, decoded)
  }

  /** preHandler: the validated parts as `params.id`, the key value handlers and overrides read (an array). */
  readonly join = async (request: FastifyRequest): Promise<void> => {
    const params = request.params
    if (isRecord(params)) params.id = this.key.of(params)
  }
}

/**
 * PUT and PATCH of a composite key: the key parts a body sends must equal the path's, else a 400 naming each one
 * (nothing is written); they are then left out of the values, since the row keeps its key.
 *
 * @example
 * ```ts
 * bodyWithoutKey(new RowKey(['book_id', 'tag_id']), { tag_id: 2, note: 'x' }, [1, 2]) // { note: 'x' }
 * ```
 */
export function bodyWithoutKey (key: RowKey, values: Row, id: unknown): Row {
  if (!key.composite) return values
  const parts = key.parts(id)
  const errors = key.columns.flatMap((column, index) => {
    const sent = values[column]
    return sent === undefined || String(sent) === String(parts[index])
      ? []
      : [{ in: 'body', field: column, message: `must equal the key's part in the path (${String(parts[index])})` }]
  })
  if (errors.length > 0) throw invalidFields(errors)
  return Object.fromEntries(Object.entries(values).filter(([name]) => !key.has(name)))
}
