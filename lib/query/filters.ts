import type { ValidateFunction } from 'ajv'
import type { Expression, SqlBool } from 'kysely'
import type { ViewsetDialect } from '../dialect/dialect.js'
import { canonicalDateTime } from '../dialect/shared/date-time.js'
import { containsPattern, endsWithPattern, startsWithPattern } from '../sql.js'
import { invalidOption } from '../errors.js'
import type { FilterOperator } from '../options.js'
import { filterOperators } from '../options.js'
import type { JsonSchema } from '../schema/derive.js'
import { isList, isRecord } from '../schema/object-schema.js'
import {
  admitsInteger,
  canonicalIntegerPattern,
  compileFor,
  isCanonicalInteger,
  nonCanonicalError,
} from '../schema/validator.js'
import type { AnyExpressionBuilder, Condition, Operand } from './condition.js'
import { queryParameterError, withOperand } from './condition.js'
import { countOperand, countPath, countOperators } from './child-counts.js'
import type { JsonPath } from './json-paths.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'
import type { PathRules, RelatedPath, RelatedRoot } from './related-paths.js'
import { groupRelated, relatedColumn, resolvePath } from './related-paths.js'
import { boundedTerm } from './search.js'
import { descriptions, maxInValues, operatorsByType, valueSchema } from './filter-values.js'
import { padList } from '../data/statement-cache.js'
import { FilterGroups, groupParameters } from './filter-groups.js'
import type { GroupFilter } from './filter-groups.js'
import { groupSchema } from '../schema/group-patterns.js'
import type { GroupTerm } from '../schema/group-patterns.js'
import { maxGroupDepth, maxGroupLength, maxGroupTerms } from './filter-grammar.js'

const groupBounds = { maxTerms: maxGroupTerms, maxDepth: maxGroupDepth, maxLength: maxGroupLength }

export { maxInValues } from './filter-values.js'

/** `?field__op=value` filters, planned from the `filterFields` option. */
export interface FilterPlan {
  /** One query parameter per field and operator, typed like the field. */
  readonly properties: Record<string, JsonSchema>
  /**
   * The conditions of a request, in a fixed order (so that equal shapes compile to equal SQL); those through
   * relations under the request's `rules`.
   */
  conditions(query: Record<string, unknown>, rules?: PathRules): Condition[]
}

type Comparison = '=' | '<>' | '>' | '>=' | '<' | '<='
const comparisons: Partial<Record<FilterOperator, Comparison>> = {
  eq: '=',
  ne: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
}
/** Validates and coerces one element of an `__in` list with the field's schema, as Fastify does a query value. */
function elementValidator (schema: JsonSchema): ValidateFunction {
  // Wrapped in an object: Ajv coerces a value in place, which it can do only inside a parent.
  return compileFor('strings', { type: 'object', properties: { value: schema }, required: ['value'] })
}

const operatorNames: ReadonlySet<unknown> = new Set(filterOperators)

function isFilterOperator (value: unknown): value is FilterOperator {
  return operatorNames.has(value)
}

/**
 * Date-times compare as instants only in one spelling: SQLite stores them as text, so
 * `2026-01-01T02:00:00+02:00` must become `2026-01-01T00:00:00.000Z`, the form the databases' defaults
 * and JavaScript's dates use. Other values pass as validated.
 */
function normalizer (field: ScalarField, parameter: string): (value: unknown) => unknown {
  if (field.schema.format !== 'date-time') return (value) => value
  return (value) => {
    // RFC 3339 in any of its spellings (a lowercase `t`, a leap second, `+23:59`), then what JavaScript reads.
    const canonical = canonicalDateTime(String(value))
    if (canonical !== undefined) return canonical
    const time = Date.parse(String(value))
    if (Number.isNaN(time)) {
      throw queryParameterError(parameter, `${JSON.stringify(value)} is not a date-time JavaScript can read`)
    }
    return new Date(time).toISOString()
  }
}

interface Filter {
  readonly parameter: string
  /** The relation path of a filter through relations, else `undefined`. */
  readonly path?: RelatedPath
  /** The condition of a value; a child count's under the request's `rules`. */
  condition(value: unknown, rules?: PathRules): Condition
}

/** The operand of a column: `table.column` inside a relation's subquery. */
function columnOperand (name: string): (rules?: PathRules) => Operand {
  const column: Operand = { shape: '', parameters: [], value: (eb) => eb.ref(name) }
  return () => column
}

/** The operand of a value computed from the row alone: a JSON path's value inside its column. */
function valueOperand (value: Expression<unknown>): (rules?: PathRules) => Operand {
  const operand: Operand = { shape: '', parameters: [], value: () => value }
  return () => operand
}

/** `operand`: what the condition compares (a column, a JSON path's value, or a child count under the request's
 * rules). */
function planFilter (
  field: ScalarField,
  operator: FilterOperator,
  parameter: string,
  dialect: ViewsetDialect,
  maxSearchLength: number,
  operand = columnOperand(field.name)
): Filter {
  const comparison = comparisons[operator]
  if (comparison !== undefined) {
    const normalize = normalizer(field, parameter)
    const { integerBound } = dialect.syntax
    const ordering = field.type === 'integer' && integerBound !== undefined && operator !== 'eq' && operator !== 'ne'
    return {
      parameter,
      condition (raw, rules) {
        // Through the dialect, which binds what its driver cannot (better-sqlite3 takes no booleans).
        const value = dialect.values.parameter(normalize(raw))
        const bound = ordering ? integerBound(value) : value
        const left = operand(rules)
        return {
          shape: parameter + left.shape,
          parameters: withOperand(left, [value]),
          expression: (eb) => eb(left.value(eb), comparison, bound),
        }
      },
    }
  }
  switch (operator) {
    case 'contains':
    case 'startswith':
    case 'endswith':
      return likeFilter(operator, parameter, dialect, maxSearchLength, operand)
    case 'isnull':
      return {
        parameter,
        condition: (value, rules) => {
          const left = operand(rules)
          return {
            shape: `${parameter}${left.shape}=${String(value)}`,
            parameters: left.parameters,
            expression: (eb: AnyExpressionBuilder): Expression<SqlBool> =>
              eb(left.value(eb), value === true ? 'is' : 'is not', null),
          }
        },
      }
    default:
      return inFilter(field, parameter, dialect, operand, operator === 'nin' ? 'not in' : 'in')
  }
}

/** The `LIKE` pattern of each substring operator. */
const likePatterns = { contains: containsPattern, startswith: startsWithPattern, endswith: endsWithPattern }

/** `contains`, `startswith` and `endswith`: a case-insensitive LIKE whose value is bounded by `maxSearchLength`. */
function likeFilter (
  operator: keyof typeof likePatterns,
  parameter: string,
  dialect: ViewsetDialect,
  maxSearchLength: number,
  operand: (rules?: PathRules) => Operand
): Filter {
  const like = likePatterns[operator]
  return {
    parameter,
    condition (value, rules) {
      const pattern = like(boundedTerm(parameter, String(value), maxSearchLength))
      const left = operand(rules)
      return {
        shape: parameter + left.shape,
        parameters: withOperand(left, [pattern]),
        expression: (eb) => dialect.syntax.ilike(left.value(eb), pattern),
      }
    },
  }
}

/**
 * `field__in` and `field__nin`: a comma-separated list (or the elements of a group term's `(…)` list), each element
 * checked like a value of the field, padded to a few lengths. `not in` never matches a NULL, as `ne` does.
 */
function inFilter (
  field: ScalarField,
  parameter: string,
  dialect: ViewsetDialect,
  operand: (rules?: PathRules) => Operand,
  operator: 'in' | 'not in'
): Filter {
  const validate = elementValidator(field.schema)
  const integers = admitsInteger(field.schema)
  const normalize = normalizer(field, parameter)
  return {
    parameter,
    condition (value, rules) {
      const values = (Array.isArray(value) ? value.map(String) : String(value).split(','))
        .map((element, index) => {
          if (integers && !isCanonicalInteger(element)) {
            throw queryParameterError(
              parameter,
              `value ${index + 1} (${JSON.stringify(element)}) ${nonCanonicalError('').message}`
            )
          }
          const holder = { value: element }
          if (!validate(holder)) {
            throw queryParameterError(
              parameter,
              `value ${index + 1} (${JSON.stringify(element)}) ${validate.errors?.[0]?.message ?? 'is not valid'}`
            )
          }
          return dialect.values.parameter(normalize(holder.value))
        })
      if (values.length > maxInValues) {
        throw queryParameterError(parameter, `lists ${values.length} values; at most ${maxInValues} are allowed`)
      }
      // Padded to a few lengths so that lists of any length share a few SQL texts (and cached statements).
      const padded = padList(values)
      const left = operand(rules)
      return {
        shape: `${parameter}${left.shape}:${padded.length}`,
        parameters: withOperand(left, padded),
        expression: (eb) => eb(left.value(eb), operator, padded),
      }
    },
  }
}

const substringOperators: ReadonlySet<FilterOperator> = new Set(['contains', 'startswith', 'endswith'])

/** The operators of one `filterFields` entry, checked: known, suited to the field's type, none listed twice. */
function checkedOperators (name: string, field: ScalarField, operators: unknown): FilterOperator[] {
  const allowed = operatorsByType[field.type]
  if (!isList(operators) || operators.length === 0) {
    invalidOption('filterFields', `"${name}": expected a non-empty array of operators (${allowed.join(', ')})`)
  }
  const seen = new Set<FilterOperator>()
  for (const op of operators) {
    if (!isFilterOperator(op)) {
      invalidOption(
        'filterFields',
        `"${name}": unknown operator ${JSON.stringify(op)}; operators: ${filterOperators.join(', ')}`
      )
    }
    if (!allowed.includes(op)) {
      invalidOption(
        'filterFields',
        `"${name}": operator "${op}" does not apply to a ${field.type} field; allowed: ${allowed.join(', ')}`
      )
    }
    // A string field over an integer column (a BIGINT as Type.String()) holds numbers: a substring of one means
    // nothing.
    if (substringOperators.has(op) && field.schema.pattern === canonicalIntegerPattern) {
      invalidOption(
        'filterFields',
        `"${name}": operator "${op}" does not apply to a string field over an integer column`
      )
    }
    if (seen.has(op)) invalidOption('filterFields', `"${name}": operator "${op}" is listed twice`)
    seen.add(op)
  }
  return [...seen]
}

/**
 * Checks `filterFields` (scalar columns, known operators that suit the field's type) and plans one query
 * parameter per field and operator: `field` and `field__eq` for `eq`, `field__op` for the others.
 * `reserved` are the parameters LIST already has; a filter may not shadow them. A `__contains` value is at
 * most `maxSearchLength` characters, like `?search=`. A name in `jsonPaths` (`meta->color`) filters on that path's
 * value inside its JSON column, typed by the column's schema (query/json-paths.ts).
 */
export function planFilters (
  option: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  dialect: ViewsetDialect,
  reserved: readonly string[],
  maxSearchLength: number,
  root?: RelatedRoot,
  jsonPaths?: ReadonlyMap<string, JsonPath>
): FilterPlan {
  if (option === undefined) return { properties: {}, conditions: () => [] }
  if (!isRecord(option)) {
    invalidOption('filterFields', "expected an object such as { name: ['eq', 'contains'] }")
  }
  const properties: Record<string, JsonSchema> = {}
  const filters: Filter[] = []
  const terms = new Map<string, GroupFilter>()
  const documented: GroupTerm[] = []
  for (const [name, operators] of Object.entries(option)) {
    // A dotted name is a path through relations (`author.name`), typed by the related schema, or a child count;
    // `meta->color` a JSON path, typed by its column's.
    const json = jsonPaths?.get(name)
    const counted = json === undefined ? countPath('filterFields', name, root) : undefined
    const path = json === undefined && counted === undefined && name.includes('.') && root !== undefined
      ? resolvePath('filterFields', name, root, false)
      : undefined
    const field = json?.field ?? counted?.field ?? path?.field ?? fields.get(name)
    if (field === undefined) {
      invalidOption(
        'filterFields',
        `"${name}" is not a filterable column of the schema; scalar columns: ${nameList(fields.keys())}`
      )
    }
    if (counted !== undefined) countOperators(name, operators)
    for (const op of checkedOperators(name, field, operators)) {
      const parameters = op === 'eq' ? [name, `${name}__eq`] : [`${name}__${op}`]
      for (const parameter of parameters) {
        if (reserved.includes(parameter) || parameter in properties) {
          invalidOption('filterFields', `the filter parameter "${parameter}" collides with another query parameter`)
        }
        const schema = valueSchema(field, op, `Rows whose ${subjectText(name, counted, path)} ${descriptions[op]}`,
          maxSearchLength)
        properties[parameter] = schema
        const operand = json !== undefined
          ? valueOperand(json.value)
          : counted !== undefined && root !== undefined
            ? countOperand(counted.link, root.table)
            : columnOperand(path === undefined ? field.name : relatedColumn(path))
        const filter = planFilter(field, op, parameter, dialect, maxSearchLength, operand)
        const planned = path === undefined ? filter : { ...filter, path }
        filters.push(planned)
        terms.set(parameter, { ...planned, list: op === 'in' || op === 'nin', schema })
        documented.push({ parameter, operator: op, field: field.schema })
      }
    }
  }
  return withGroups({ properties, filters, terms, documented }, reserved, maxSearchLength, root)
}

/** How a filter's description names what it compares: the field, a child count, or a field through relations. */
function subjectText (
  name: string, counted: ReturnType<typeof countPath>, path: RelatedPath | undefined
): string {
  if (counted !== undefined) return `number of ${counted.link.field} (the related rows the caller's rules admit)`
  if (path === undefined) return name
  return `${name} (through the relation ${path.hops.map((hop) => hop.field).join('.')}: at least one related row)`
}

/** The filters planned from `filterFields`, as the plain parameters and the groups' terms read them. */
interface PlannedFilters {
  readonly properties: Record<string, JsonSchema>
  readonly filters: readonly Filter[]
  readonly terms: ReadonlyMap<string, GroupFilter>
  readonly documented: readonly GroupTerm[]
}

/** The plan of the plain filters and of the group parameters (`or`, `and`, `not.or`, `not.and`) over them. */
function withGroups (
  { properties, filters, terms, documented }: PlannedFilters,
  reserved: readonly string[],
  maxSearchLength: number,
  root: RelatedRoot | undefined
): FilterPlan {
  // A group's terms are the same filters, by the same parameter names: a filter the list lacks is no term either.
  const groups = new FilterGroups(terms)
  for (const parameter of Object.keys(groupParameters)) {
    if (reserved.includes(parameter) || parameter in properties) {
      invalidOption('filterFields', `the filter parameter "${parameter}" collides with the group parameter`)
    }
  }
  return {
    properties: { ...properties, ...groupSchema(documented, { ...groupBounds, maxSearchLength, maxInValues }) },
    conditions: (query, rules) => [
      ...filterConditions(filters, query, root, rules),
      ...groups.conditions(query, root?.table, rules),
    ],
  }
}

/** The conditions of the filters a query names; those through relations grouped into one subquery per path. */
function filterConditions (
  filters: readonly Filter[],
  query: Record<string, unknown>,
  root: RelatedRoot | undefined,
  rules: PathRules | undefined
): Condition[] {
  const conditions: Condition[] = []
  const related: Array<{ path: RelatedPath; condition: Condition }> = []
  for (const filter of filters) {
    const value = query[filter.parameter]
    if (value === undefined) continue
    if (filter.path === undefined) conditions.push(filter.condition(value, rules))
    else related.push({ path: filter.path, condition: filter.condition(value) })
  }
  if (related.length > 0 && root !== undefined) conditions.push(...groupRelated(related, root.table, rules))
  return conditions
}
