// The options of `GET {prefix}/aggregate` (method AGGREGATE): which fields may group the rows, and which numeric
// fields may be summed, averaged, and their least and greatest values asked for. Checked at mounting
// (query/aggregate.ts), against the schema, the relations and the table's column types.

/**
 * The functions `aggregateFields` may allow per field, each a query parameter of `GET {prefix}/aggregate`
 * (`?sum=price&avg=price,stock`).
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'books', schema: Book, methods: ['LIST', 'AGGREGATE'],
 *   aggregateFields: { price: [...aggregateFunctions] } })
 * ```
 */
export const aggregateFunctions = ['sum', 'avg', 'min', 'max'] as const

/**
 * One function of `aggregateFields`: `sum`, `avg` (a JSON number rounded to 6 decimal places), `min` or `max`.
 * `sum`, `min` and `max` keep the field's own representation (a DECIMAL or BIGINT served as a string stays one).
 *
 * @example
 * ```ts
 * const money: AggregateFunction[] = ['sum', 'avg']
 * ```
 */
export type AggregateFunction = (typeof aggregateFunctions)[number]

/**
 * The options of the AGGREGATE method (`GET {prefix}/aggregate`, registered only when `methods` lists
 * `'AGGREGATE'`), over the schema's field names `F` and relation paths `P`.
 *
 * @example
 * ```ts
 * createViewset({
 *   db, table: 'books', schema: Book, relatedConfig, methods: ['LIST', 'GET', 'AGGREGATE'],
 *   groupByFields: ['status', 'author.name'],
 *   aggregateFields: { price: ['sum', 'avg', 'min', 'max'], stock: ['avg'] },
 * })
 * // GET /books/aggregate?group_by=status,author.name&count=true&sum=price&avg=price,stock
 * ```
 */
export interface AggregateOptions<F extends string, P extends string> {
  /**
   * The fields `?group_by=` may name (default: none, so every aggregate is of the whole filtered set): scalar
   * fields of the schema, and paths through `selectRelated` (to-one) relations such as `'author.name'`.
   */
  groupByFields?: ReadonlyArray<F | P>
  /**
   * The numeric fields `?sum=`, `?avg=`, `?min=` and `?max=` may name, with the functions allowed on each
   * (default: none, so only `count=true`). A field must be a number, an integer, or a string served from a DECIMAL
   * or BIGINT column.
   */
  aggregateFields?: { readonly [K in F]?: readonly AggregateFunction[] }
}
