import createError from '@fastify/error'

/**
 * An error whose one argument is the problem's `detail`, with a default when it is omitted. @fastify/error
 * formats arguments into a template (`'%s'` alone would print `%s`), so the default is supplied here.
 */
function detailError<C extends string, SC extends number> (code: C, fallback: string, statusCode: SC) {
  return class extends createError<C, SC, [string]>(code, '%s', statusCode) {
    constructor (detail?: string) {
      super(detail ?? fallback)
    }
  }
}

/** An error whose `errors` (when given) are listed in the problem, like a schema validation failure's. */
function listingError<C extends string, SC extends number> (code: C, fallback: string, statusCode: SC) {
  return class extends createError<C, SC, [string]>(code, '%s', statusCode) {
    readonly errors: FieldError[] | undefined
    constructor (detail?: string, errors?: readonly FieldError[]) {
      super(detail ?? fallback)
      this.errors = errors === undefined ? undefined : [...errors]
    }
  }
}

/** Takes no argument: util.format would append one to the message, and an internal error must say nothing. */
class InternalError extends createError('FST_VIEWSET_INTERNAL', 'An unexpected error occurred', 500) {
  // Not useless: it drops any argument a caller passes, which createError's constructor would format.
  // eslint-disable-next-line @typescript-eslint/no-useless-constructor
  constructor () {
    super()
  }
}

/**
 * Every error the library raises, defined once. The README lists them all.
 * Request errors become `application/problem+json` bodies (RFC 9457) carrying `code`; the string given
 * to one of them is the problem's `detail`. Configuration errors are thrown when a viewset is created,
 * at registration or at `app.ready()`.
 *
 * @example
 * ```ts
 * throw new ViewsetErrors.Forbidden('not your review')   // 403, "detail": "not your review"
 * throw new ViewsetErrors.Validation('title is taken', [{ in: 'body', field: 'title', message: 'is taken' }])
 * ```
 */
export const ViewsetErrors = {
  // request errors
  NotFound: listingError('FST_VIEWSET_NOT_FOUND', 'No such row', 404),
  RouteNotFound: createError('FST_VIEWSET_ROUTE_NOT_FOUND', 'Route %s %s not found', 404),
  MethodNotAllowed: detailError(
    'FST_VIEWSET_METHOD_NOT_ALLOWED',
    'This method is not allowed on this path: the Allow header lists those that are',
    405
  ),
  Validation: listingError('FST_VIEWSET_VALIDATION', 'The request is not valid', 400),
  InvalidBody: createError('FST_VIEWSET_INVALID_BODY', 'The request body is not valid JSON', 400),
  UnsupportedMediaType: createError('FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type: %s', 415),
  /** The same code as UnsupportedMediaType: a client sends a body this library cannot read either way. */
  UnsupportedContentEncoding: createError(
    'FST_VIEWSET_UNSUPPORTED_MEDIA_TYPE',
    'The body has a Content-Encoding other than identity: send it uncompressed',
    415
  ),
  PayloadTooLarge: createError('FST_VIEWSET_PAYLOAD_TOO_LARGE', 'The request body is larger than the limit', 413),
  BadUrl: createError('FST_VIEWSET_BAD_URL', 'The URL is not valid (malformed percent-encoding)', 400),
  UriTooLong: createError('FST_VIEWSET_URI_TOO_LONG', 'A path parameter is longer than the limit', 414),
  BadRequest: detailError('FST_VIEWSET_BAD_REQUEST', 'The request cannot be served', 400),
  InvalidCursor: detailError(
    'FST_VIEWSET_INVALID_CURSOR',
    'The cursor is not one this list made: follow the Link header, or start again without cursor',
    400
  ),
  UnsupportedOrdering: createError(
    'FST_VIEWSET_UNSUPPORTED_ORDERING',
    'Unsupported ordering %s: the allowed fields are %s (a leading - sorts descending)',
    400
  ),
  InvalidValue: detailError('FST_VIEWSET_INVALID_VALUE', 'A value cannot be stored', 400),
  /** `errors` names the element of a bulk write, `/3/email`, when the database says which. */
  Conflict: listingError('FST_VIEWSET_CONFLICT', 'The request conflicts with the stored data', 409),
  IdempotencyKeyInUse: detailError(
    'FST_VIEWSET_IDEMPOTENCY_KEY_IN_USE',
    'A request with this Idempotency-Key is still in flight: retry after the Retry-After seconds',
    409
  ),
  IdempotencyKeyReused: detailError(
    'FST_VIEWSET_IDEMPOTENCY_KEY_REUSED',
    'This Idempotency-Key was used for a different request (method, path, query or body): use a new key',
    422
  ),
  PreconditionFailed: detailError(
    'FST_VIEWSET_PRECONDITION_FAILED',
    'If-Match does not name the stored version of the row: nothing was changed; read it again',
    412
  ),
  PreconditionRequired: detailError(
    'FST_VIEWSET_PRECONDITION_REQUIRED',
    'This operation needs an If-Match header with the ETag of the row',
    428
  ),
  Unauthorized: detailError('FST_VIEWSET_UNAUTHORIZED', 'This operation needs a valid bearer token', 401),
  Forbidden: listingError('FST_VIEWSET_FORBIDDEN', 'The token does not allow this operation', 403),
  DeletedRowsHidden: detailError(
    'FST_VIEWSET_DELETED_ROWS_HIDDEN', 'Deleted rows are not shown to this caller (?deleted= needs showDeleted)', 403
  ),
  Unavailable: detailError('FST_VIEWSET_UNAVAILABLE', 'The database is unavailable, try again later', 503),
  Timeout: detailError('FST_VIEWSET_TIMEOUT', 'The database statement ran past the time limit, try again later', 503),
  Internal: InternalError,
  // configuration errors: TypeErrors, thrown by the constructor (phase 1) or at mounting (phase 2), never in a request
  InvalidOption: createError('FST_VIEWSET_INVALID_OPTION', 'Invalid viewset option %s: %s', 500, TypeError),
  UnknownTable: createError('FST_VIEWSET_UNKNOWN_TABLE', 'Table "%s" does not exist in the database', 500, TypeError),
  UnknownColumn: createError(
    'FST_VIEWSET_UNKNOWN_COLUMN',
    'Schema field "%s" is not a column of table "%s" (columns: %s)',
    500,
    TypeError
  ),
  DocsAfterViewsets: createError(
    'FST_VIEWSET_DOCS_ORDER',
    'viewsetDocs was registered after %s: @fastify/swagger documents only the routes added after it, so the ' +
      'document would leave them out. Register viewsetDocs before the viewsets',
    500,
    TypeError
  ),
  InvalidDatabaseUrl: createError(
    'FST_VIEWSET_INVALID_DATABASE_URL',
    'Unsupported DATABASE_URL "%s": %s',
    500,
    TypeError
  ),
  // a helper of a viewset with a row rule (`this.query()` …) called where no request is served: it cannot run open
  OutsideRequest: createError(
    'FST_VIEWSET_OUTSIDE_REQUEST',
    'this.%s() of the viewset of "%s" applies the row rule (scope) of the request it serves, and no request is ' +
      'being served: trusted code (a script, a job) that may reach every row calls this.unscoped.%s()',
    500,
    TypeError
  ),
  PreconditionNotApplicable: createError(
    'FST_VIEWSET_PRECONDITION_NOT_APPLICABLE',
    'this.precondition() cannot apply to %s %s: %s (it reads If-Match for a route that writes the row its :id names)',
    500,
    TypeError
  ),
  // a connection pooler between the app and PostgreSQL (createDatabase's `pooler`)
  PoolerStatements: createError(
    'FST_VIEWSET_POOLER_STATEMENTS',
    "A connection pooler mixed up the server's prepared statements: open the database with " +
      "createDatabase(url, { pooler: 'pgbouncer' }), or preparedStatements: false",
    500
  ),
  PoolerNotNamed: createError(
    'FST_VIEWSET_POOLER_NOT_NAMED',
    'A connection pooler sits between the app and PostgreSQL (the server process is not the one the connection ' +
      "announced), and its named prepared statements would collide: pass createDatabase(url, { pooler: 'pgbouncer' })" +
      ', or preparedStatements: true for a pooler that keeps them (session mode, PgBouncer 1.21+ with ' +
      'max_prepared_statements)',
    500,
    TypeError
  ),
  StatementTimeoutIgnored: createError(
    'FST_VIEWSET_STATEMENT_TIMEOUT_IGNORED',
    'The server runs statements with statement_timeout = %s ms, not the statementTimeout of %s ms: a pooler ' +
      "dropped it (PgBouncer's ignore_startup_parameters). Set it on the role (ALTER ROLE ... SET " +
      'statement_timeout), list it in track_extra_parameters (PgBouncer 1.20+), or pass statementTimeout: 0',
    500,
    TypeError
  ),
} as const

/**
 * The 403 of a write whose row, as it would be stored, is outside the viewset's rule for the method (its `WITH
 * CHECK`): nothing is written. `element`: the index of the first such element of a bulk write.
 *
 * @example
 * ```ts
 * throw outsideRule(3) // 403, "detail": "Element 3 would be written outside the rows this token may access"
 * ```
 */
export function outsideRule (element?: number): InstanceType<typeof ViewsetErrors.Forbidden> {
  return new ViewsetErrors.Forbidden(
    `${element === undefined ? 'The row' : `Element ${element}`}` +
      ' would be written outside the rows this token may access'
  )
}

/**
 * The 404 of a bulk write by key whose elements' rows do not exist (or not for this caller): `errors` names each
 * element by JSON pointer (`/3`), and nothing is written.
 *
 * @example
 * ```ts
 * throw missingRows([{ in: 'body', field: '/3', message: 'no such row' }])
 * ```
 */
export function missingRows (errors: readonly FieldError[]): InstanceType<typeof ViewsetErrors.NotFound> {
  const first = errors[0]?.field.slice(1) ?? ''
  return new ViewsetErrors.NotFound(`No row with the key of element ${first}: nothing was written`, errors)
}

/**
 * Throws `FST_VIEWSET_INVALID_OPTION` naming the option (a path such as `relatedConfig.selectRelated.author.table`):
 * the one way an option check fails. Returns `never`, so it also ends an expression.
 *
 * @example
 * ```ts
 * const limit = typeof value === 'number' ? value : invalidOption('maxLimit', 'expected a positive integer')
 * ```
 */
export function invalidOption (option: string, message: string): never {
  throw new ViewsetErrors.InvalidOption(option, message)
}

/**
 * One failing field of a request, as listed in a validation problem.
 *
 * @example
 * ```ts
 * const error: FieldError = { in: 'body', field: 'price', message: 'must be >= 0' }
 * ```
 */
export interface FieldError {
  /** Where the field is: `body`, `querystring`, `params` or `headers`. */
  in: string
  /** The field's name or JSON pointer; empty when the whole part is wrong. */
  field: string
  /** What is wrong with it, in words. */
  message: string
}

/**
 * A 400 naming its failing fields in `detail` (at most {@link maxProblemErrors} of them), with `errors` listing them.
 *
 * @example
 * ```ts
 * // detail: "The request is not valid: email is required"
 * throw invalidFields([{ in: 'body', field: 'email', message: 'is required' }])
 * ```
 */
export function invalidFields (errors: readonly FieldError[]): InstanceType<typeof ViewsetErrors.Validation> {
  const named = errors
    .slice(0, maxProblemErrors)
    .map((error) => `${error.field === '' ? error.in : error.field} ${error.message}`)
    .join('; ')
  return new ViewsetErrors.Validation(
    `The request is not valid: ${named}${errors.length > maxProblemErrors ? '; …' : ''}`,
    errors
  )
}

/**
 * The body of every error response (RFC 9457 problem details), sent as `application/problem+json`.
 *
 * @example
 * ```ts
 * const body: Problem = (await app.inject({ url: '/items/999' })).json()
 * // { type: 'urn:fastify-viewsets:problem:not-found', title: 'Not Found', status: 404,
 * //   detail: 'No row with id = 999', code: 'FST_VIEWSET_NOT_FOUND' }
 * ```
 */
export interface Problem {
  /** A stable URN naming the kind of problem, made from `code` (`urn:fastify-viewsets:problem:not-found`). */
  type: string
  /** The HTTP status's reason phrase (`Not Found`): the same for every problem of that status. */
  title: string
  /** The HTTP status code, as on the response. */
  status: number
  /** What went wrong with this request, in a sentence for people (at most 1,000 characters); never SQL or a stack. */
  detail: string
  /** The stable `FST_VIEWSET_*` code a client branches on (the README lists them all). */
  code: string
  /** A URI naming this occurrence, when one is given. */
  instance?: string
  /** The failing fields of a validation problem: at most {@link maxProblemErrors}. */
  errors?: FieldError[]
  /** How many failing fields were left out of `errors`; absent when none were. */
  errorsOmitted?: number
}

/** At most this many `errors` in a problem, and this many characters of `detail`: a hostile body cannot make the answer
 * huge. */
export const maxProblemErrors = 50
export const maxProblemDetail = 1000

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
}

/**
 * Builds a problem body; `type` is a stable URN made from the code. `errors` beyond the first 50 are
 * counted in `errorsOmitted`, and `detail` is cut at 1,000 characters (ending with `…`).
 *
 * @example
 * ```ts
 * reply.code(409).type('application/problem+json').send(problem(409, 'APP_SOLD_OUT', 'The item is sold out'))
 * ```
 */
export function problem (status: number, code: string, detail: string, errors?: readonly FieldError[]): Problem {
  const body: Problem = {
    type: `urn:fastify-viewsets:problem:${code
      .replace(/^FST_VIEWSET_/, '')
      .toLowerCase()
      .replaceAll('_', '-')}`,
    title: titles[status] ?? 'Error',
    status,
    detail: detail.length > maxProblemDetail ? `${detail.slice(0, maxProblemDetail - 1)}…` : detail,
    code,
  }
  if (errors !== undefined) {
    body.errors = errors.slice(0, maxProblemErrors)
    if (errors.length > maxProblemErrors) body.errorsOmitted = errors.length - maxProblemErrors
  }
  return body
}

/**
 * What a database error means to a client; anything else is a 500. `value`, on a unique or foreign-key
 * fault, is the key's value as the database printed it (PostgreSQL's detail, MySQL's `Duplicate entry`),
 * compared with the dialect's `keyText` to tell which element of a bulk write failed; never sent.
 *
 * @example
 * ```ts
 * const fault: DatabaseFault = { kind: 'unique', target: 'items_name_key' } // answers 409 FST_VIEWSET_CONFLICT
 * ```
 */
export type DatabaseFault =
  | { kind: 'unique'; target: string | undefined; value?: string | undefined }
  | { kind: 'not-null' | 'check'; target: string | undefined }
  /** `referenced`: true when the row is still referenced, false when a reference finds no row, undefined when the
   * database does not say. */
  | { kind: 'foreign-key'; target: string | undefined; referenced: boolean | undefined; value?: string | undefined }
  | { kind: 'invalid-value'; reason: string }
  /** `rolledBack`: a deadlock victim or a serialization failure (or SQLite busy): the database undid the whole
   * transaction, which can run again as it is (the library retries its own write transactions: retry-on-deadlock). */
  | { kind: 'unavailable'; rolledBack?: true }
  /** A statement ran past createDatabase's `statementTimeout` (or was cancelled). */
  | { kind: 'timeout' }
  /** A row-level security policy's `WITH CHECK` refused the row written (`rowLevelSecurity`). */
  | { kind: 'forbidden' }

/** The problem a database fault answers; `method` is the HTTP method (a DELETE's foreign-key fault names nothing). */
export function faultProblem (fault: DatabaseFault, method: string) {
  switch (fault.kind) {
    case 'unique':
      return new ViewsetErrors.Conflict(`A row with the same ${fault.target ?? 'unique value'} already exists`)
    case 'foreign-key':
      // A DELETE fails only because other rows still point at this one: never name their table or values.
      if (fault.referenced === true || method === 'DELETE') {
        return new ViewsetErrors.Conflict('The row is still referenced by other rows')
      }
      if (fault.referenced === false) {
        return new ViewsetErrors.Conflict(`The ${fault.target ?? 'reference'} refers to a row that does not exist`)
      }
      return new ViewsetErrors.Conflict(
        `The ${fault.target ?? 'reference'} refers to a row that does not exist, or the row is still referenced`
      )
    case 'not-null':
      return new ViewsetErrors.BadRequest(`${fault.target ?? 'A field'} must not be null`)
    case 'check':
      return new ViewsetErrors.BadRequest(`A value breaks the check ${fault.target ?? 'constraint'}`)
    case 'invalid-value':
      return new ViewsetErrors.InvalidValue(`A value cannot be stored: ${fault.reason}`)
    case 'unavailable':
      return new ViewsetErrors.Unavailable()
    case 'timeout':
      return new ViewsetErrors.Timeout()
    case 'forbidden':
      return outsideRule()
  }
}
