// derive.ts's JsonSchema, restated: validator.ts imports this file, and derive.ts imports validator.ts.
type JsonSchema = Record<string, unknown>

// Patterns that document exactly the comma-separated lists the server accepts (`fields`, `order_by`, `__in`):
// a value the document allows is one the server takes, so a tool that generates requests from the document
// (Schemathesis) finds no valid request refused.

/**
 * The patterns made here: each documents a check the LIST parser makes itself with a message of its own (the
 * unknown field named, the allowed ones listed), so the validator leaves their failures to it.
 */
export const documentingPatterns = new Set<string>()

/** `pattern`, remembered in {@link documentingPatterns}. */
export function documenting (pattern: string): string {
  documentingPatterns.add(pattern)
  return pattern
}

/** `text` matched literally by an ECMA-262 pattern under the `u` flag (where only syntax characters may be escaped). */
export function escapePattern (text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
}

/** One of `names`, as a pattern group. */
function isString (value: unknown): value is string {
  return typeof value === 'string'
}

function alternation (names: readonly string[]): string {
  return `(?:${[...names].sort((a, b) => b.length - a.length).map(escapePattern).join('|')})`
}

/**
 * `fields`: one or more of `names`, comma-separated.
 *
 * @example
 * ```ts
 * namesPattern(['id', 'name']) // '^(?:name|id)(?:,(?:name|id))*$'
 * ```
 */
export function namesPattern (names: readonly string[]): string {
  const name = alternation(names)
  return documenting(`^${name}(?:,${name})*$`)
}

/**
 * `order_by`: one or more of `names`, each with an optional leading `-` (and, with `nulls`, an optional trailing
 * `.nullsfirst` or `.nullslast`), none twice (the lookahead refuses a name met again later in the list).
 */
export function sortKeysPattern (names: readonly string[], nulls = false): string {
  const name = alternation(names)
  const suffix = nulls ? '(?:\\.nulls(?:first|last))?' : ''
  return documenting(
    `^(?!(?:[^,]*,)*-?(${name})${suffix},(?:[^,]*,)*-?\\1${suffix}(?:,|$))-?${name}${suffix}(?:,-?${name}${suffix})*$`
  )
}

/** The pattern of a string without NUL: the databases refuse it in a LIKE term, and PostgreSQL in any text. */
export const noNulPattern = documenting('^[^\\u0000]*$')

/**
 * The pattern of a string field on PostgreSQL, whose text cannot hold NUL: the validator refuses it with a 400
 * naming the field, before the database would. Spelled apart from {@link noNulPattern}, which the LIST parser
 * checks itself: this one's failures are the validator's own.
 */
export const storableTextPattern = '^[^\\x00]*$'

/**
 * `__in`: a comma-separated list of elements of `element`'s schema, when one pattern can say so: an integer
 * (written canonically), a string enum, or a string with an anchored pattern. `undefined` otherwise.
 */
export function elementListPattern (element: JsonSchema): string | undefined {
  const one = elementPattern(element)
  return one === undefined ? undefined : documenting(`^${one}(?:,${one})*$`)
}

/** One element of an `__in` list as an unanchored pattern group. */
function elementPattern (element: JsonSchema): string | undefined {
  const values: unknown = element.enum
  if (Array.isArray(values) && values.every(isString) && !values.some((value) => value.includes(','))) {
    return alternation(values)
  }
  if (element.type === 'integer') return integerPattern(element)
  const text = plainStringPattern(element)
  if (text !== undefined) return text
  const anchored = element.pattern
  if (typeof anchored !== 'string' || !anchored.startsWith('^') || !anchored.endsWith('$')) return undefined
  // An anchored pattern whose body may not match a comma: then the split is the one the server makes.
  const body = anchored.slice(1, -1)
  return body.includes(',') || body.includes('[^') || body.includes('.') ? undefined : `(?:${body})`
}

/**
 * A string with no format and no pattern of its own (PostgreSQL's no-NUL one aside) as an element: its lengths
 * and no comma, so that `country__in=abc` over a `maxLength: 2` field is refused by the document as by the server
 * (Prism found it). `undefined` when nothing bounds it.
 */
function plainStringPattern (element: JsonSchema): string | undefined {
  const { minLength, maxLength, pattern } = element
  if (element.type !== 'string' || element.format !== undefined) return undefined
  if (pattern !== undefined && pattern !== storableTextPattern) return undefined
  const min = typeof minLength === 'number' ? minLength : 0
  const max = typeof maxLength === 'number' ? String(maxLength) : ''
  if (min === 0 && max === '' && pattern === undefined) return undefined
  return `[^,${pattern === undefined ? '' : '\\x00'}]{${min},${max}}`
}

/** The canonical integers from 0 to `max` (decimal digits, no leading zero), as a pattern group. */
function upTo (max: string): string {
  const parts = ['0']
  const digits = max.length
  // Every number with fewer digits than max, then those with as many that stay at or below it.
  if (digits > 1) parts.push(`[1-9][0-9]{0,${digits - 2}}`)
  for (let i = 0; i < digits; i++) {
    const digit = Number(max[i])
    const low = i === 0 ? 1 : 0
    if (digit > low) parts.push(`${max.slice(0, i)}[${low}-${digit - 1}][0-9]{${digits - i - 1}}`)
  }
  if (max !== '0') parts.push(max)
  return `(?:${parts.join('|')})`
}

/**
 * An integer schema's values as the server reads them from a URL (canonical decimal, `-0` included) within its
 * bounds, when they include 0 (an integer column's range); `undefined` for bounds a pattern would need to
 * subtract from.
 */
function integerPattern (element: JsonSchema): string | undefined {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = element
  const low =
    typeof minimum === 'number'
      ? Math.ceil(minimum)
      : typeof exclusiveMinimum === 'number'
        ? Math.floor(exclusiveMinimum) + 1
        : undefined
  const high =
    typeof maximum === 'number'
      ? Math.floor(maximum)
      : typeof exclusiveMaximum === 'number'
        ? Math.ceil(exclusiveMaximum) - 1
        : undefined
  if (low === undefined || high === undefined || low > 0 || high < 0) return undefined
  return `(?:-${upTo(String(-low))}|${upTo(String(high))})`
}

/** A value of a group term: no character that ends one (`,`, `(`, `)`, `"`), nor `\\` or NUL. */
const termText = '[^,()"\\\\\\x00]'
const dateTime =
  '[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{3})?Z'

/**
 * One unquoted value of a group term (issue 37) of a field of this schema, as an unanchored pattern group, when a
 * pattern can say exactly which values the server takes; `undefined` otherwise. `bound`: an ordering bound
 * (`gt gte lt lte`), which keeps the type but not the field's limits.
 */
export function termValuePattern (field: JsonSchema, bound: boolean): string | undefined {
  const values: unknown = field.enum
  if (Array.isArray(values)) {
    const plain = values
      .filter(isString)
      .filter((value) => value !== '' && !/[,()"\\]/.test(value) && !value.includes('\u0000'))
    return plain.length === 0 || bound ? undefined : alternation(plain)
  }
  const { type, format, pattern, minimum, maximum } = field
  const free = bound || (minimum === undefined && maximum === undefined && field.exclusiveMinimum === undefined)
  switch (type) {
    case 'boolean':
      return '(?:true|false)'
    case 'integer':
      return bound ? shortIntegers : integerValues(field)
    case 'number': {
      const fraction = '(?:\\.[0-9]{1,3})?'
      const unbounded = bound || (free && field.exclusiveMaximum === undefined && maximum === undefined)
      if (unbounded) return `(?:0|-?[1-9][0-9]{0,5})${fraction}`
      return minimum === 0 && maximum === undefined ? `(?:0|[1-9][0-9]{0,5})${fraction}` : undefined
    }
    case 'string':
      if (format === 'date-time') return pattern === undefined ? dateTime : undefined
      if (format !== undefined) return undefined
      if (pattern === canonicalInteger) return '(?:0|-?[1-9][0-9]{0,8})'
      if (pattern !== undefined && pattern !== storableTextPattern) return undefined
      return `${termText}{${textLengths(field)}}`
    default:
      return undefined
  }
}

/** Integers of up to nine digits, either sign: within every integer column's range, and short to document. */
const shortIntegers = '(?:0|-?[1-9][0-9]{0,8})'

/** An integer field's values as a short pattern when its bounds hold those of up to nine digits it allows. */
function integerValues (field: JsonSchema): string | undefined {
  const { minimum, maximum } = field
  if (field.exclusiveMinimum !== undefined || field.exclusiveMaximum !== undefined) return integerPattern(field)
  const low = typeof minimum === 'number' ? minimum : -Infinity
  const high = typeof maximum === 'number' ? maximum : Infinity
  if (high < 999_999_999) return integerPattern(field)
  if (low <= -999_999_999) return shortIntegers
  if (low === 0) return '(?:0|[1-9][0-9]{0,8})'
  return low === 1 ? '[1-9][0-9]{0,8}' : integerPattern(field)
}

/** The canonical integer pattern of validator.ts, restated (validator.ts imports this file). */
const canonicalInteger = '^-?(0|[1-9][0-9]*)$'

/** `min,max` of a string's length, at most 40 (what the document lets a generator produce). */
function textLengths ({ minLength, maxLength }: JsonSchema): string {
  const min = typeof minLength === 'number' ? minLength : 0
  const max = Math.min(typeof maxLength === 'number' ? maxLength : 40, 40)
  return `${min},${Math.max(min, max)}`
}
