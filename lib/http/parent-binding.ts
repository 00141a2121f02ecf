import type { FastifyReply, FastifyRequest } from 'fastify'
import { expressionBuilder } from 'kysely'
import type { Expression, SqlBool } from 'kysely'
import type { ForeignKeyCheck } from '../data/foreign-key-check.js'
import type { ColumnInfo } from '../dialect/dialect.js'
import { invalidFields, invalidOption, ViewsetErrors } from '../errors.js'
import type { FieldError } from '../errors.js'
import type { ScopedMethod, ViewsetToken } from '../options.js'
import { scopeCondition } from '../query/scope.js'
import type { ScopeCondition } from '../query/scope.js'
import type { JsonSchema } from '../schema/derive.js'
import { propertiesOf } from '../schema/derive.js'
import { isRecord } from '../schema/object-schema.js'
import type { AnyDatabase, Row } from '../sql.js'

// Nested resources (`/projects/:projectId/issues`): each parameter of the prefix is bound to a column of the table
// (the `parent` option), and every route of the viewset is restricted to the rows whose column holds its value, as
// one more term of the row rule; writes set it, a body that sends another value is a 400, and a parent that does not
// exist or that the caller's rules hide is a 404 before the handler runs.

/** A viewset's row rule for one request and method, compiled. */
type ScopeOf = (request: FastifyRequest, token: ViewsetToken | null, method: ScopedMethod) => ScopeCondition | undefined

/** One parameter of the prefix and the column it binds. */
interface BoundParameter {
  readonly param: string
  readonly column: string
  /** The parameter's schema: the column's field, scalar and not null. */
  readonly schema: JsonSchema
}

/** The parameters of a prefix, in order: `/projects/:projectId/issues` → `['projectId']`. */
export function prefixParameters (prefix: string): string[] {
  return [...prefix.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].flatMap((match) => match[1] ?? [])
}

/** A prefix with its parameters' values: `/projects/:projectId/issues` → `/projects/7/issues`, for `Location`. */
export function expandPrefix (prefix: string, params: unknown): string {
  if (!prefix.includes(':') || !isRecord(params)) return prefix
  return prefix.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) =>
    params[name] === undefined ? whole : encodeURIComponent(String(params[name])))
}

/** The non-null scalar branch of a field's schema, annotations a path parameter cannot carry dropped. */
function scalarOf (property: JsonSchema | undefined, column: ColumnInfo): JsonSchema {
  const anyOf = property?.anyOf
  const branches = Array.isArray(anyOf) ? anyOf.filter(isRecord) : property === undefined ? [] : [property]
  const branch = branches.find((candidate) => candidate.type !== 'null')
  if (branch !== undefined && typeof branch.type === 'string') {
    const { readOnly: _readOnly, default: _default, description: _description, ...rest } = branch
    return rest
  }
  return /int/.test(column.type) ? { type: 'integer' } : { type: 'string' }
}

/** What the binding is checked against at mounting. */
export interface ParentTable {
  readonly table: string
  readonly prefix: string
  readonly columns: ReadonlyMap<string, ColumnInfo>
  readonly entity: JsonSchema
  readonly foreignKeys: ForeignKeyCheck
}

/**
 * The `parent` option checked against the prefix and the catalog: every parameter of the prefix bound, every bound
 * name a parameter, every column a single-column foreign key of the table. `undefined` for a prefix without
 * parameters and no `parent`. A mistake fails `app.ready()` naming the option.
 */
export function bindParent (parent: Readonly<Record<string, string>>, target: ParentTable): ParentBinding | undefined {
  const { table, prefix, columns, entity, foreignKeys } = target
  const params = prefixParameters(prefix)
  for (const param of params) {
    if (!Object.hasOwn(parent, param)) {
      invalidOption('parent', `the prefix "${prefix}" has the parameter :${param}, bound to no column: ` +
        `name the column it selects, as parent: { ${param}: '<column>' }`)
    }
  }
  const bound: BoundParameter[] = []
  for (const [param, column] of Object.entries(parent)) {
    const option = `parent.${param}`
    if (!params.includes(param)) {
      const named = params.join(', ') || 'none'
      invalidOption(option, `the prefix "${prefix}" has no :${param} parameter (its parameters: ${named})`)
    }
    const info = columns.get(column)
    if (info === undefined) {
      const names = [...columns.keys()].join(', ')
      invalidOption(option, `"${column}" is not a column of table "${table}" (columns: ${names})`)
    }
    if (foreignKeys.referenceOf(column) === undefined) {
      invalidOption(option, `"${column}" is not a single-column foreign key of table "${table}": the parent's ` +
        'existence and rules are checked through the table it references')
    }
    bound.push({ param, column, schema: scalarOf(propertiesOf(entity)[column], info) })
  }
  return bound.length === 0 ? undefined : new ParentBinding(table, bound, foreignKeys)
}

/** A parameter's value as its column is compared with: a validated route coerced it; a custom route's is text. */
function valueOf (request: FastifyRequest, { param, schema }: BoundParameter): unknown {
  const value = isRecord(request.params) ? request.params[param] : undefined
  if (typeof value !== 'string' || schema.type !== 'integer') return value
  if (!/^-?\d{1,15}$/.test(value)) {
    throw invalidFields([{ in: 'params', field: param, message: 'must be integer' }])
  }
  return Number(value)
}

/** Which rows a nested viewset's routes reach, what its writes set, and the check of its parent. Built at mounting. */
export class ParentBinding {
  readonly #table: string
  readonly #bound: readonly BoundParameter[]
  readonly #foreignKeys: ForeignKeyCheck

  constructor (table: string, bound: readonly BoundParameter[], foreignKeys: ForeignKeyCheck) {
    this.#table = table
    this.#bound = bound
    this.#foreignKeys = foreignKeys
  }

  /** The path parameters every route of the viewset has, as schemas (OpenAPI documents them). */
  get params (): Record<string, JsonSchema> {
    return Object.fromEntries(this.#bound.map(({ param, column, schema }) =>
      [param, { ...schema, description: `The ${column} of the rows: their parent.` }]))
  }

  /** The entity with the bound columns optional: a body need not send what the path already says. */
  optionalIn (entity: JsonSchema): JsonSchema {
    if (!Array.isArray(entity.required)) return entity
    const columns = new Set(this.#bound.map(({ column }) => column))
    return { ...entity, required: entity.required.filter((field) => typeof field !== 'string' || !columns.has(field)) }
  }

  /** The bound columns and the request's values: what every write sets. */
  values (request: FastifyRequest): Row {
    return Object.fromEntries(this.#bound.map((bound) => [bound.column, valueOf(request, bound)]))
  }

  /** `scopeOf` with the parent's terms ANDed in: the rows of this parent only, for every method and helper. */
  scoped (db: AnyDatabase, scopeOf: ScopeOf): ScopeOf {
    const eb = expressionBuilder<Record<string, Row>, string>()
    return (request, token, method) => {
      const terms: Array<Expression<SqlBool>> =
        this.#bound.map((bound) => eb(bound.column, '=', valueOf(request, bound)))
      const own = scopeOf(request, token, method)
      if (own !== undefined) terms.push(own.where)
      return scopeCondition(db, this.#table, eb.and(terms))
    }
  }

  /** A write body that sends a bound column with another value than the path's: a 400 naming each such field. */
  #checkBody (request: FastifyRequest): void {
    const { body } = request
    const bodies = Array.isArray(body) ? body : [body]
    const errors: FieldError[] = []
    const expected = this.values(request)
    bodies.forEach((element, index) => {
      if (!isRecord(element)) return
      for (const { param, column } of this.#bound) {
        const sent = element[column]
        if (sent === undefined || (sent !== null && String(sent) === String(expected[column]))) continue
        const field = Array.isArray(body) ? `/${index}/${column}` : column
        errors.push({ in: 'body', field, message: `must be ${String(expected[column])}, the :${param} of the path` })
      }
    })
    if (errors.length > 0) throw invalidFields(errors)
  }

  /**
   * The hook of every route of the viewset (preHandler: after authentication and validation): a parent that does
   * not exist, or that the `'GET'` rule of its table hides from the caller, is a 404; then a body that moves rows to
   * another parent is a 400. One key lookup per request.
   */
  readonly check = async (request: FastifyRequest, _reply: FastifyReply, db: AnyDatabase): Promise<void> => {
    const rules = { request, token: request.viewsetToken }
    for (const bound of this.#bound) {
      const value = valueOf(request, bound)
      if (await this.#foreignKeys.admits(db, bound.column, value, rules) !== true) {
        const reference = this.#foreignKeys.referenceOf(bound.column)
        const where = `${reference?.column ?? 'id'} = ${String(value)}`
        throw new ViewsetErrors.NotFound(`No ${reference?.table ?? 'parent'} row with ${where}`)
      }
    }
    if (request.body !== undefined) this.#checkBody(request)
  }
}
