import { invalidFields } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'

// A batch operation's body may take a value from an earlier operation's result: a JSON value that is exactly
// `{"$result": <index>, "pointer": "<JSON pointer>"}` (issue 38 item 3). An object, never a string pattern, so that
// no stored text can be read as one; resolved before the operation is validated, so the value it stands for is
// checked as if the client had sent it.

/** What a reference reads: the earlier results' bodies, by operation index. */
export interface ResolvedResults {
  readonly bodies: readonly unknown[]
}

/** A reference: an object whose keys are exactly `$result` and `pointer`. */
function isReference (value: Record<string, unknown>): boolean {
  const keys = Object.keys(value)
  return keys.length === 2 && '$result' in value && 'pointer' in value
}

/** A JSON pointer's token as RFC 6901 writes it: `~` as `~0`, `/` as `~1`. */
function escapeToken (token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1')
}

/** The value at `pointer` (RFC 6901) in `document`, or `undefined` when it names nothing there. */
function valueAt (document: unknown, pointer: string): unknown {
  if (pointer === '') return document
  if (!pointer.startsWith('/')) return undefined
  let value: unknown = document
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(value)) {
      if (!/^(?:0|[1-9]\d{0,8})$/.test(token)) return undefined
      value = value[Number(token)]
    } else if (isRecord(value) && Object.hasOwn(value, token)) {
      value = value[token]
    } else {
      return undefined
    }
  }
  return value
}

/** The value a reference at `where` (a pointer into the batch body) stands for; a 400 naming `where` when none. */
function resolveOne (reference: Record<string, unknown>, where: string, index: number, results: ResolvedResults) {
  const { $result: target, pointer } = reference
  const fail = (message: string): never => {
    throw invalidFields([{ in: 'body', field: where, message }])
  }
  if (typeof target !== 'number' || !Number.isInteger(target) || target < 0 || target >= index) {
    return fail(`refers to $result ${JSON.stringify(target)}: it must name an earlier operation (0 to ${index - 1})`)
  }
  if (typeof pointer !== 'string') return fail('has a pointer that is not a string (a JSON pointer such as /id)')
  const value = valueAt(results.bodies[target], pointer)
  if (value === undefined) return fail(`refers to ${JSON.stringify(pointer)}, which operation ${target}'s result lacks`)
  return value
}

/**
 * `body` with each reference replaced by the value it stands for, read from an earlier operation's result body;
 * `where` is the body's JSON pointer in the batch request (`/operations/2/body`), which a bad reference's 400 names
 * with the reference's own path (`/operations/2/body/author_id`). Values are copied, never shared.
 *
 * @example
 * ```ts
 * resolveReferences({ author_id: { $result: 0, pointer: '/id' } }, '/operations/1/body', 1, { bodies: [{ id: 7 }] })
 * // { author_id: 7 }
 * ```
 */
export function resolveReferences (body: unknown, where: string, index: number, results: ResolvedResults): unknown {
  if (Array.isArray(body)) {
    return body.map((element, at) => resolveReferences(element, `${where}/${at}`, index, results))
  }
  if (!isRecord(body)) return body
  if (isReference(body)) return structuredClone(resolveOne(body, where, index, results))
  // fromEntries defines each key (a `__proto__` key stays a key, never the prototype).
  return Object.fromEntries(Object.entries(body).map(([key, value]) =>
    [key, resolveReferences(value, `${where}/${escapeToken(key)}`, index, results)]))
}
