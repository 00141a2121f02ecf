import type { Expression, ExpressionBuilder, OperationNode, SqlBool } from 'kysely'
import type { Row } from '../sql.js'
import { ViewsetErrors } from '../errors.js'

/** The expression builder of LIST queries: tables known at run time, columns checked at registration. */
export type AnyExpressionBuilder = ExpressionBuilder<Record<string, Row>, string>

/**
 * One `WHERE` term of a LIST request. `shape` names the SQL it compiles to without its values, so that
 * requests of the same shape share one compiled statement; `parameters` are the values it binds, in order.
 */
export interface Condition {
  readonly shape: string
  readonly parameters: readonly unknown[]
  expression (eb: AnyExpressionBuilder): Expression<SqlBool>
}

/**
 * What a filter compares with its value: a column, or a value computed under the request's rules (a child count,
 * query/child-counts.ts), with the shape and the values it adds, bound before the filter's own.
 */
export interface Operand {
  readonly shape: string
  readonly parameters: readonly unknown[]
  value (eb: AnyExpressionBuilder): Expression<unknown>
}

/** The values of a filter over `operand`: the operand's, then the filter's own. */
export function withOperand (operand: Operand, values: readonly unknown[]): readonly unknown[] {
  return operand.parameters.length === 0 ? values : [...operand.parameters, ...values]
}

/** An expression over an operation node that is already built. */
export function expressionOf (node: OperationNode): Expression<SqlBool> {
  return {
    get expressionType () { return undefined },
    toOperationNode: () => node,
  }
}

/**
 * A 400 about one query parameter, in the same shape as a schema validation failure: the problem
 * handler lists it under `errors` with the parameter's name.
 */
export function queryParameterError (parameter: string, message: string): Error {
  return Object.assign(new ViewsetErrors.Validation(`The request is not valid: ${parameter} ${message}`), {
    validation: [{ instancePath: `/${parameter}`, keyword: 'query', message, params: {} }],
    validationContext: 'querystring',
  })
}

/**
 * A substring to match. SQLite's LIKE stops at a NUL character (so `\0` would match every row) and
 * PostgreSQL refuses it: it is a 400 on every dialect.
 */
export function checkedTerm (parameter: string, term: string): string {
  if (term.includes('\u0000')) throw queryParameterError(parameter, 'must not contain the NUL character')
  return term
}
