import type { FilterOperator } from '../options.js'
import { filterOperators } from '../options.js'
import type { JsonSchema } from '../schema/derive.js'
import { elementListPattern, noNulPattern } from '../schema/list-patterns.js'
import type { ScalarField, ScalarType } from './field-types.js'

// What each filter operator's query parameter documents and accepts: its description and its value's schema.

/** The most values one `__in` or `__nin` filter may list (each one is a bound parameter). */
export const maxInValues = 100

/** What each operator's query parameter asks of a field, for its OpenAPI description. */
export const descriptions: Record<FilterOperator, string> = {
  eq: 'equals this value',
  ne: 'differs from this value (rows where it is null never match)',
  gt: 'is greater than this value',
  gte: 'is greater than or equal to this value',
  lt: 'is less than this value',
  lte: 'is less than or equal to this value',
  in: `is one of these comma-separated values (at most ${maxInValues})`,
  nin: `is none of these comma-separated values (at most ${maxInValues}; rows where it is null never match)`,
  contains: 'contains this substring, case-insensitive (`%`, `_` and `\\` match themselves)',
  startswith: 'starts with this text, case-insensitive (`%`, `_` and `\\` match themselves)',
  endswith: 'ends with this text, case-insensitive (`%`, `_` and `\\` match themselves)',
  isnull: 'is null (`true`) or is not null (`false`)',
}
// Ordering comparisons of booleans and substrings of non-strings mean nothing: refuse them at startup.
export const operatorsByType: Record<ScalarType, readonly FilterOperator[]> = {
  string: filterOperators,
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'isnull'],
  integer: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'isnull'],
  boolean: ['eq', 'ne', 'isnull'],
}
const numberBounds: Record<string, JsonSchema> = {
  integer: { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
  number: { minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE },
}

/** The schema a value of this operator must match. */
export function valueSchema (
  field: ScalarField,
  operator: FilterOperator,
  description: string,
  maxSearchLength: number
): JsonSchema {
  switch (operator) {
    case 'in':
    case 'nin': {
      const allowed = Array.isArray(field.schema.enum)
        ? ` Allowed values: ${field.schema.enum.map(String).join(', ')}.`
        : ''
      const pattern = elementListPattern(field.schema)
      return {
        type: 'string',
        minLength: 1,
        ...(pattern === undefined ? {} : { pattern }),
        description: `${description}.${allowed}`,
      }
    }
    case 'contains':
    case 'startswith':
    case 'endswith':
      return {
        type: 'string',
        maxLength: maxSearchLength,
        // A NUL is refused (checkedTerm): the document says so.
        pattern: noNulPattern,
        description: `${description}, at most ${maxSearchLength} characters`,
      }
    case 'isnull':
      return { type: 'boolean', description }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      // An ordering bound need not be a storable value (`price__gte=-1` is fine): keep the type, not the limits.
      const { type, format, pattern } = field.schema
      // The pattern stays: it is what makes a string over an integer column a canonical integer.
      return {
        ...(type === undefined ? { type: field.type } : { type }),
        ...(format === undefined ? {} : { format }),
        ...(pattern === undefined ? {} : { pattern }),
        ...numberBounds[field.type],
        description,
      }
    }
    default:
      return { ...field.schema, description }
  }
}
