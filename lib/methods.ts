// The logical methods a viewset serves and the filter operators a LIST accepts: the names options, `authorize`
// and `scope` speak in.
/**
 * The logical methods every viewset can serve, in the order their routes are added (then {@link historyMethods} and
 * {@link softDeleteMethods}, which need their options). `BULK` is `POST {prefix}/bulk`; `PATCH_MANY` is
 * `PATCH {prefix}?<filters>`, `BULK_PATCH` is `PATCH {prefix}/bulk` and `DELETE_MANY` is `DELETE {prefix}?<filters>`;
 * `AGGREGATE` is `GET {prefix}/aggregate` (grouped counts and sums).
 *
 * @example
 * ```ts
 * viewsetMethods.filter((method) => method !== 'DELETE') // every method but DELETE, for `methods`
 * ```
 */
export const viewsetMethods = [
  'LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'AGGREGATE',
] as const
/**
 * One of the logical methods a viewset serves: `LIST` (`GET {prefix}`), `GET`, `POST`, `BULK`
 * (`POST {prefix}/bulk`), `PUT`, `PATCH`, `DELETE` (`{prefix}/:id`), the bulk writes `PATCH_MANY`,
 * `BULK_PATCH` and `DELETE_MANY`, and `AGGREGATE` (`GET {prefix}/aggregate`). What `methods`, `protectedMethods`,
 * `authorize` and `scope` name, never the HTTP verb.
 *
 * @example
 * ```ts
 * const readOnly: ViewsetMethod[] = ['LIST', 'GET']
 * createViewset({ db, table: 'items', schema: Item, methods: readOnly })
 * ```
 */
export type ViewsetMethod =
  | (typeof viewsetMethods)[number] | (typeof historyMethods)[number] | (typeof softDeleteMethods)[number]

/**
 * The method of a viewset with the `history` option only, registered when `methods` lists it: `HISTORY`
 * (`GET {prefix}/:id/history`, a row's recorded writes). Not in {@link viewsetMethods}, which every viewset can serve.
 *
 * @example
 * ```ts
 * const methods: ViewsetMethod[] = [...defaultMethods, ...historyMethods]
 * createViewset({ db, table: 'posts', schema: Post, history: { createTable: true }, methods })
 * ```
 */
export const historyMethods = ['HISTORY'] as const

/**
 * The methods of a soft-deleting viewset only (the `softDelete` option), each registered when `methods` lists it:
 * `RESTORE` (`POST {prefix}/:id/restore`) and `PURGE` (`DELETE {prefix}/:id/purge`). Not in {@link viewsetMethods},
 * which every viewset can serve.
 *
 * @example
 * ```ts
 * const methods: ViewsetMethod[] = ['LIST', 'GET', 'DELETE', ...softDeleteMethods]
 * createViewset({ db, table: 'posts', schema: Post, softDelete: 'deleted_at', methods })
 * ```
 */
export const softDeleteMethods = ['RESTORE', 'PURGE'] as const

/** Every method, in the order their routes are added. */
export const allMethods: readonly ViewsetMethod[] = [...viewsetMethods, ...historyMethods, ...softDeleteMethods]

/** The methods registered only when `methods` names them: those that write many rows per request, and `AGGREGATE`,
 * which reads every row of the filtered set. */
const optInMethods: readonly ViewsetMethod[] = [
  'BULK', 'PATCH_MANY', 'BULK_PATCH', 'DELETE_MANY', 'AGGREGATE',
]

/** The methods registered when `methods` is not given: all but the opt-in ones. */
export const defaultMethods: readonly ViewsetMethod[] =
  viewsetMethods.filter((method) => !optInMethods.includes(method))

/**
 * Filter operators of `filterFields`. `eq` is also the bare `?field=value`.
 *
 * @example
 * ```ts
 * createViewset({ db, table: 'items', schema: Item, filterFields: { price: [...filterOperators] } })
 * ```
 */
export const filterOperators = [
  'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'startswith', 'endswith', 'isnull',
] as const
/**
 * An operator of `filterFields`, sent as `?field__op=value`: `eq` (also `?field=value`), `ne`, `gt`, `gte`,
 * `lt`, `lte`, `in` and `nin` (comma-separated values), `contains`, `startswith` and `endswith` (case-insensitive),
 * `isnull` (`true`/`false`).
 *
 * @example
 * ```ts
 * const filterFields: Record<string, FilterOperator[]> = { price: ['gte', 'lte'], name: ['contains'] }
 * // GET /items?price__gte=10&name__contains=lamp
 * ```
 */
export type FilterOperator = (typeof filterOperators)[number]

/**
 * What `authorize` is asked about: a generated method, or `'CUSTOM'` for a protected custom route.
 *
 * @example
 * ```ts
 * authorize: (token, method: AuthorizedMethod) => method === 'LIST' || method === 'GET' || token.role === 'admin'
 * ```
 */
export type AuthorizedMethod = ViewsetMethod | 'CUSTOM'
