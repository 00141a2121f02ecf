/** Where a page sits, to link its neighbours. */
export interface PagePosition {
  readonly limit: number
  readonly offset: number
  /** Rows on this page. */
  readonly rows: number
  /** Rows in all pages, when counted. */
  readonly total: number | undefined
  /** The largest offset a client may ask for (`maxOffset`): no `next` link points past it. */
  readonly maxOffset?: number
}

const offsetNames = ['limit', 'offset']
const cursorNames = ['limit', 'cursor']
const changesNames = ['limit', 'changed_since']

function isPagination (pair: string, names: readonly string[]): boolean {
  const equals = pair.indexOf('=')
  const name = equals === -1 ? pair : pair.slice(0, equals)
  // Most names carry no escape: nothing to decode.
  if (!name.includes('%') && !name.includes('+')) return names.includes(name)
  let decoded = name
  try {
    decoded = decodeURIComponent(name.replaceAll('+', ' '))
  } catch {
    // A malformed escape cannot be `limit` or `offset`: keep the pair as sent.
  }
  return names.includes(decoded)
}

// What may stand in a URI unescaped (RFC 3986), plus `%` of the escapes already there. Anything else
// (`<`, `>`, `"`, spaces, non-ASCII sent raw) would break the header's syntax or make Node refuse it.
const unescaped = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/

function escapeUri (text: string): string {
  return text.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/gu, (char) => {
    try {
      return encodeURIComponent(char)
    } catch {
      return '%EF%BF%BD' // a lone surrogate: U+FFFD
    }
  })
}

/**
 * The URL with the named parameters removed, ready for more: `/items?search=x&`. Runs on every LIST: the
 * usual URL has nothing to escape, which one test of the whole URL tells (`?` and `&` escape to themselves).
 */
function pageBase (url: string, names: readonly string[]): string {
  const escaped = unescaped.test(url) ? url : escapeUri(url)
  const mark = escaped.indexOf('?')
  if (mark === -1) return `${escaped}?`
  let kept = ''
  for (let start = mark + 1; start < escaped.length;) {
    let end = escaped.indexOf('&', start)
    if (end === -1) end = escaped.length
    const pair = escaped.slice(start, end)
    if (pair !== '' && !isPagination(pair, names)) kept += `${pair}&`
    start = end + 1
  }
  return `${escaped.slice(0, mark + 1)}${kept}`
}

/**
 * The `Link` header of a page read by cursor: `next` and `prev` carry their cursors (base64url, so
 * nothing to escape), every other parameter as the client sent it. Either is absent when there is none.
 *
 * @example
 * ```ts
 * cursorLinkHeader('/items?order_by=-price', { limit: 20, next: 'WyJhIi', prev: undefined })
 * // '</items?order_by=-price&limit=20&cursor=WyJhIi>; rel="next"'
 * ```
 */
export function cursorLinkHeader (
  url: string,
  { limit, next, prev }: { limit: number; next: string | undefined; prev: string | undefined }
): string | undefined {
  const base = `${pageBase(url, cursorNames)}limit=${limit}&cursor=`
  const links: string[] = []
  if (next !== undefined) links.push(`<${base}${next}>; rel="next"`)
  if (prev !== undefined) links.push(`<${base}${prev}>; rel="prev"`)
  return links.length === 0 ? undefined : links.join(', ')
}

/**
 * The `Link` header (RFC 8288) of a page: `next` unless the page is short (or, with a count, the last) or
 * its offset would pass `maxOffset`, `prev` unless it is the first. The URLs keep every other query
 * parameter as the client sent it.
 *
 * @example
 * ```ts
 * linkHeader('/items?search=x&limit=10', { limit: 10, offset: 0, rows: 10, total: undefined })
 * // '</items?search=x&limit=10&offset=10>; rel="next"'
 * ```
 */
export function linkHeader (
  url: string,
  { limit, offset, rows, total, maxOffset = Number.MAX_SAFE_INTEGER }: PagePosition
): string | undefined {
  const next = offset + limit
  const hasNext = rows >= limit && (total === undefined || next < total) && next <= maxOffset
  if (!hasNext && offset === 0) return undefined
  const base = `${pageBase(url, offsetNames)}limit=${limit}&offset=`
  const nextLink = hasNext ? `<${base}${next}>; rel="next"` : undefined
  if (offset === 0) return nextLink
  const prevLink = `<${base}${Math.max(0, offset - limit)}>; rel="prev"`
  return nextLink === undefined ? prevLink : `${nextLink}, ${prevLink}`
}

/**
 * The `Link` header of a page of changes (`changed_since`) that read as many entries as it could: `next` asks for the
 * changes after its `next` position, with every other parameter as the client sent it.
 *
 * @example
 * ```ts
 * changesLinkHeader('/notes?changed_since=0&status=open', { limit: 100, next: '17' })
 * // '</notes?status=open&limit=100&changed_since=17>; rel="next"'
 * ```
 */
export function changesLinkHeader (url: string, { limit, next }: { limit: number; next: string }): string {
  return `<${pageBase(url, changesNames)}limit=${limit}&changed_since=${next}>; rel="next"`
}
