/// <reference lib="es2024.string" />
import { isUtf8 } from 'node:buffer'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FieldError } from '../errors.js'
import { invalidFields } from '../errors.js'

/** A content-type parser's callback, as Fastify declares it. */
type Done = (error: Error | null, body?: unknown) => void

/** Fastify's JSON parser over a string (`getDefaultJsonParser`), which this one runs once the bytes are checked. */
export type JsonParser = (request: FastifyRequest, body: string, done: Done) => void

/** A JSON escape of a surrogate code unit (`\ud800`): the one way a body of valid UTF-8 can hold a lone surrogate. */
const surrogateEscape = /\\u[dD][89a-fA-F]/

/**
 * The first string (value or key) of a parsed body that is not well-formed UTF-16, named like Ajv's errors: a JSON
 * pointer in an array body (`/3/name`), a dotted path in an object body (`tags.0`).
 */
function illFormedField (value: unknown, path: readonly string[]): string[] | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : [...path]
  if (typeof value !== 'object' || value === null) return undefined
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value)
  for (const [key, item] of entries) {
    const at = [...path, String(key)]
    if (typeof key === 'string' && !key.isWellFormed()) return at
    const found = illFormedField(item, at)
    if (found !== undefined) return found
  }
  return undefined
}

function bodyError (field: string, message: string): Error {
  return invalidFields([{ in: 'body', field, message }])
}

/**
 * The JSON body parser of a viewset's scope: a body that is not UTF-8 (raw bytes such as 0xFF, or an encoded
 * surrogate), or whose strings are not well-formed UTF-16 (JSON's `"\ud800"`, at any depth, keys too), is a 400
 * `FST_VIEWSET_VALIDATION` naming the field. Fastify's own parser decodes bytes leniently and would store U+FFFD in
 * their place. Cheap on the hot path: `isUtf8` is one native pass, and the tree is walked only when the text holds
 * a surrogate escape.
 *
 * @example
 * ```ts
 * fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, wellFormedJson(json))
 * ```
 */
export function wellFormedJson (json: JsonParser) {
  return function parseWellFormed (request: FastifyRequest, body: Buffer | string, done: Done): void {
    if (typeof body !== 'string' && !isUtf8(body)) {
      done(bodyError('', 'is not valid UTF-8'))
      return
    }
    const text = typeof body === 'string' ? body : body.toString('utf8')
    // Without a surrogate escape the parsed strings are well-formed: Fastify's callback is handed on as it is.
    if (!surrogateEscape.test(text)) {
      json(request, text, done)
      return
    }
    json(request, text, (error, value) => {
      if (error !== null) {
        done(error, value)
        return
      }
      const field = illFormedField(value, [])
      if (field === undefined) done(null, value)
      else {
        done(bodyError(
          Array.isArray(value) ? `/${field.join('/')}` : field.join('.'),
          'is not well-formed UTF-16 (a lone surrogate)'
        ))
      }
    })
  }
}

/** A `+` in a query string is a space (application/x-www-form-urlencoded), as Fastify's query parser reads it. */
function decodeQueryPart (part: string): string | undefined {
  try {
    const decoded = decodeURIComponent(part.replaceAll('+', ' '))
    return decoded.isWellFormed() ? decoded : undefined
  } catch {
    return undefined
  }
}

/**
 * An `onRequest` hook of a viewset's scope: a query parameter whose name or value is not valid UTF-8 once
 * percent-decoded (`%FF`, an encoded surrogate `%ED%A0%80`) is a 400 `FST_VIEWSET_VALIDATION` naming it. Fastify's
 * query parser keeps such a value as it came, percent signs and all. A query string of plain ASCII with no `%`
 * is not looked at further. A callback hook, as content-encoding.ts's.
 */
export function wellFormedQuery (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const start = request.url.indexOf('?')
  const query = start === -1 ? '' : request.url.slice(start + 1)
  // eslint-disable-next-line no-control-regex -- the test is for any character outside ASCII
  if (!query.includes('%') && !/[^\u0000-\u007f]/.test(query)) {
    done()
    return
  }
  const errors: FieldError[] = []
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=')
    const rawName = equals === -1 ? pair : pair.slice(0, equals)
    const name = decodeQueryPart(rawName)
    const value = equals === -1 ? '' : decodeQueryPart(pair.slice(equals + 1))
    if (name === undefined || value === undefined) {
      errors.push({ in: 'querystring', field: name ?? rawName, message: 'is not valid UTF-8' })
    }
  }
  done(errors.length > 0 ? invalidFields(errors) : undefined)
}
