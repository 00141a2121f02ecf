import type { CountPreference } from '../query/count-plan.js'

// RFC 7240's Prefer header, read for the preferences a viewset honours. Hand-written: the grammar
// (a comma-separated list of `token[=word]`, each with `;` parameters) is a few lines, not a dependency.

/** The preference that makes POST merge into the row with the same `conflictFields`, as PostgREST spells it. */
export const mergeDuplicates = 'resolution=merge-duplicates'

/** The preference that makes POST skip the rows whose `conflictFields` values exist, as PostgREST spells it. */
export const ignoreDuplicates = 'resolution=ignore-duplicates'

/** The preference that answers a write without a body, as RFC 7240 spells it. */
export const returnMinimal = 'return=minimal'

/** Splits on `separator` outside quoted strings (a `\` escapes the next character inside one). */
function splitOutsideQuotes (text: string, separator: string): string[] {
  const parts: string[] = []
  let current = ''
  let quoted = false
  for (let index = 0; index < text.length; index++) {
    const char = text[index] ?? ''
    if (quoted && char === '\\') {
      current += char + (text[index + 1] ?? '')
      index++
      continue
    }
    if (char === '"') quoted = !quoted
    if (char === separator && !quoted) {
      parts.push(current)
      current = ''
    } else {
      current += char
    }
  }
  parts.push(current)
  return parts
}

/**
 * The preferences of a Prefer header (`Prefer: return=minimal, resolution=merge-duplicates; x=1`), by
 * lower-cased name, each with its value (unquoted, `''` when it has none). Parameters after `;` are
 * dropped: no preference read here takes parameters. Several headers arrive joined by commas, as one list.
 *
 * @example
 * ```ts
 * // Map { 'return' => 'minimal', 'resolution' => 'merge-duplicates' }
 * preferences('Return=minimal, resolution="merge-duplicates"')
 * ```
 */
export function preferences (header: string | readonly string[] | undefined): Map<string, string> {
  const found = new Map<string, string>()
  const text = typeof header === 'string' ? header : (header?.join(',') ?? '')
  for (const preference of splitOutsideQuotes(text, ',')) {
    const [head = ''] = splitOutsideQuotes(preference, ';')
    const equals = head.indexOf('=')
    const name = (equals === -1 ? head : head.slice(0, equals)).trim().toLowerCase()
    if (name === '') continue
    let value = equals === -1 ? '' : head.slice(equals + 1).trim()
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
      value = value.slice(1, -1).replace(/\\(.)/g, '$1')
    }
    // RFC 7240: a preference given twice counts the first time.
    if (!found.has(name)) found.set(name, value)
  }
  return found
}

/** Whether a Prefer header asks for `resolution=merge-duplicates` (names and this value compared case-insensitively).
 * */
export function prefersMergeDuplicates (header: string | readonly string[] | undefined): boolean {
  return resolutionPreference(header) === mergeDuplicates
}

/**
 * The `resolution` a Prefer header asks for, `resolution=merge-duplicates` or `resolution=ignore-duplicates`
 * (compared case-insensitively), else `undefined`.
 *
 * @example
 * ```ts
 * resolutionPreference('Resolution=Ignore-Duplicates') // 'resolution=ignore-duplicates'
 * ```
 */
export function resolutionPreference (
  header: string | readonly string[] | undefined
): typeof mergeDuplicates | typeof ignoreDuplicates | undefined {
  const value = `resolution=${preferences(header).get('resolution')?.toLowerCase() ?? ''}`
  return value === mergeDuplicates || value === ignoreDuplicates ? value : undefined
}

/**
 * The count a Prefer header asks LIST for, as PostgREST spells it: `count=exact` or `count=estimated` (compared
 * case-insensitively); any other value is ignored, as RFC 7240 ignores a preference it does not know.
 *
 * @example
 * ```ts
 * countPreference('count=estimated') // 'estimated'
 * ```
 */
export function countPreference (header: string | readonly string[] | undefined): CountPreference | undefined {
  if (header === undefined) return undefined
  const value = preferences(header).get('count')?.toLowerCase()
  return value === 'exact' || value === 'estimated' ? value : undefined
}

/** Whether a Prefer header asks for `return=minimal`: a write answered without a body (compared case-insensitively). */
export function prefersReturnMinimal (header: string | readonly string[] | undefined): boolean {
  return header !== undefined && preferences(header).get('return')?.toLowerCase() === 'minimal'
}
