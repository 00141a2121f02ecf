import { ViewsetErrors } from '../errors.js'
import { sortKeysPattern } from '../schema/list-patterns.js'
import { nameList } from './field-types.js'
import { describe, isProblem, nullsChoice, parseOrdering } from './ordering.js'

// The ordering parser exported for overridden handlers: `order_by` read as the generated LIST reads its own, with
// the same bounds and the same 400.

/**
 * One key of an `order_by` that {@link parseOrderBy} read.
 *
 * @example
 * ```ts
 * const keys: Array<SortKey<'name' | 'id'>> = parseOrderBy('-name.nullslast', ['name'], 'id')
 * // [{ field: 'name', descending: true, nulls: 'last' }, { field: 'id', descending: false }]
 * ```
 */
export interface SortKey<F extends string> {
  /** The field to order by, one of those allowed (or the tie-breaker). */
  readonly field: F
  /** Whether it was written with a leading `-`. */
  readonly descending: boolean
  /**
   * Where NULLs go, when the key was written with `.nullsfirst` or `.nullslast`; absent, LIST's default rule holds
   * (NULL the largest value: last ascending, first descending).
   */
  readonly nulls?: 'first' | 'last'
}

/**
 * Reads an overridden `list`'s `order_by` as the generated LIST reads its own: comma-separated fields among
 * `allowed`, each with an optional leading `-` and an optional trailing `.nullsfirst` or `.nullslast` (kept as the
 * key's `nulls`), none twice, then `tieBreaker` (the primary key) unless listed.
 * Anything else is a 400 `FST_VIEWSET_UNSUPPORTED_ORDERING` listing the allowed fields, so a request orders by at
 * most `allowed.length + 1` keys however long its `order_by`. Document the parameter with
 * {@link orderByPattern}.
 *
 * @example
 * ```ts
 * const fields = ['name', 'created_at'] as const
 * for (const { field, descending, nulls } of parseOrderBy(request.query.order_by, fields, 'id')) {
 *   query = query.orderBy(field, (o) => (nulls === 'first' ? o.nullsFirst() : nulls === 'last' ? o.nullsLast() : o)
 *     [descending ? 'desc' : 'asc']())
 * }
 * ```
 */
export function parseOrderBy<F extends string, K extends string = never> (
  text: string,
  allowed: readonly F[],
  tieBreaker?: K
): Array<SortKey<F | K>> {
  const parsed = parseOrdering(text, new Map(allowed.map((name) => [name, { nullable: false }])), tieBreaker, true)
  if (isProblem(parsed)) throw new ViewsetErrors.UnsupportedOrdering(describe(parsed), nameList(allowed))
  const named = (field: string): F | K | undefined =>
    field === tieBreaker ? tieBreaker : allowed.find((name) => name === field)
  // The keys come in the order of the parts (the tie-breaker last): each part's written choice, as written.
  const parts = text.split(',')
  return parsed.keys.flatMap(({ field, descending }, index) => {
    const name = named(field)
    const nulls = nullsChoice(parts[index] ?? '', true).choice
    return name === undefined ? [] : [{ field: name, descending, ...(nulls === undefined ? {} : { nulls }) }]
  })
}

/**
 * The `pattern` of an `order_by` query parameter that {@link parseOrderBy} reads with these `allowed` fields: the
 * document then allows no value the parser refuses. Its failures are left to the parser's own 400.
 *
 * @example
 * ```ts
 * Type.String({ pattern: orderByPattern(['name', 'created_at']), default: '-created_at' })
 * ```
 */
export function orderByPattern (allowed: readonly string[]): string {
  return sortKeysPattern(allowed, true)
}
