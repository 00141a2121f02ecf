import { sql } from 'kysely'
import type { FastifyValidationResult } from 'fastify/types/schema.js'
import type { Expression, SqlBool } from 'kysely'
import type { JsonSchema } from '../schema/derive.js'
import { viewsetValidatorCompiler } from '../schema/validator.js'
import type { Condition } from './condition.js'
import { queryParameterError } from './condition.js'
import type { GroupNode, TermNames, TermNode } from './filter-grammar.js'
import { parseGroup } from './filter-grammar.js'
import type { PathRules, RelatedPath } from './related-paths.js'
import { groupRelated } from './related-paths.js'

// Boolean combinations of filters (issue 37 item 1): each term is a plain filter, found by the same parameter
// name, validated by the same schema and built by the same condition; groups combine them with AND, OR and NOT.

/** The query parameters that hold groups, with the operator of their top-level group and whether it is negated. */
export const groupParameters = {
  or: { operator: 'or', negated: false },
  and: { operator: 'and', negated: false },
  'not.or': { operator: 'or', negated: true },
  'not.and': { operator: 'and', negated: true },
} as const

/** A filter as a group term reads it: its parameter, relation path, value schema and condition. */
export interface GroupFilter {
  readonly parameter: string
  readonly path?: RelatedPath
  /** Whether its value is a list (`in`, `nin`). */
  readonly list: boolean
  readonly schema: JsonSchema
  /** The condition of a value; a child count's under the request's `rules`. */
  condition(value: unknown, rules?: PathRules): Condition
}

/** Where a group's relation terms start: the parent table, and the request's rules. */
interface Scope {
  readonly table: string | undefined
  readonly rules: PathRules | undefined
  readonly group: string
}

/** `NOT (…)`: under SQL's three-valued logic, a comparison with NULL stays unknown and never matches. */
function negation (condition: Condition): Condition {
  return {
    shape: `not(${condition.shape})`,
    parameters: condition.parameters,
    expression: (eb) => sql<SqlBool>`not (${condition.expression(eb)})`,
  }
}

/** Several conditions joined by AND or OR, in order (the order their values bind in). */
function joined (operator: 'and' | 'or', conditions: readonly Condition[]): Condition {
  const [only] = conditions
  if (conditions.length === 1 && only !== undefined) return only
  return {
    shape: `${operator}(${conditions.map((condition) => condition.shape).join(',')})`,
    parameters: conditions.flatMap((condition) => condition.parameters),
    // A raw `or` marks the statement heavy for the cost classification (no one index range answers it).
    expression: (eb) => {
      const parts: Array<Expression<SqlBool>> = conditions.map((condition) => condition.expression(eb))
      return operator === 'and' ? eb.and(parts) : sql<SqlBool>`(${sql.join(parts, sql` or `)})`
    },
  }
}

/** Plans the group parameters over the filters (by parameter name): parses, validates and builds a request's groups. */
export class FilterGroups implements TermNames {
  readonly #filters: ReadonlyMap<string, GroupFilter>
  readonly #validators = new Map<string, FastifyValidationResult>()

  constructor (filters: ReadonlyMap<string, GroupFilter>) {
    this.#filters = filters
  }

  has (parameter: string): boolean {
    return this.#filters.has(parameter)
  }

  takesList (parameter: string): boolean {
    return this.#filters.get(parameter)?.list === true
  }

  unknown (parameter: string, name: string): Error {
    return queryParameterError(
      name,
      `(in ${parameter}) is not a filter of this list; a term is field__op.value with a filter parameter of the list`
    )
  }

  /** The conditions of the request's group parameters, one per group (repeated keys included), in a fixed order. */
  conditions (query: Record<string, unknown>, table: string | undefined, rules: PathRules | undefined): Condition[] {
    const conditions: Condition[] = []
    const budget = { terms: 0 }
    for (const [parameter, { operator, negated }] of Object.entries(groupParameters)) {
      const value = query[parameter]
      if (value === undefined) continue
      for (const text of Array.isArray(value) ? value : [value]) {
        const group = parseGroup(String(text), parameter, operator, negated, this, budget)
        conditions.push(this.#group(group, { table, rules, group: parameter }))
      }
    }
    return conditions
  }

  #group (group: GroupNode, scope: Scope): Condition {
    const conditions: Condition[] = []
    // Inside AND, the relation terms on one path hold for the same related row: one EXISTS per path.
    const together: Array<{ path: RelatedPath; condition: Condition }> = []
    for (const item of group.items) {
      if (item.kind === 'group') {
        conditions.push(this.#group(item, scope))
        continue
      }
      const filter = this.#filters.get(item.name)
      if (filter === undefined) throw this.unknown(scope.group, item.name)
      const condition = filter.condition(this.#checked(filter, item, scope.group), scope.rules)
      if (filter.path === undefined) conditions.push(item.negated ? negation(condition) : condition)
      else if (group.operator === 'and' && !item.negated) together.push({ path: filter.path, condition })
      else conditions.push(this.#related(filter.path, condition, item.negated, scope))
    }
    if (together.length > 0 && scope.table !== undefined) {
      conditions.push(...groupRelated(together, scope.table, scope.rules))
    }
    const combined = joined(group.operator, conditions)
    return group.negated ? negation(combined) : combined
  }

  /** A relation term alone: EXISTS under the relations' rules, NOT EXISTS when negated. */
  #related (path: RelatedPath, condition: Condition, negated: boolean, scope: Scope): Condition {
    const [exists] = scope.table === undefined ? [] : groupRelated([{ path, condition }], scope.table, scope.rules)
    if (exists === undefined) throw queryParameterError(scope.group, 'names a relation this list does not have')
    return negated ? negation(exists) : exists
  }

  /** The term's value, validated and coerced by the schema of the same plain filter (a list is checked by it). */
  #checked (filter: GroupFilter, term: TermNode, group: string): unknown {
    if (filter.list || typeof term.value !== 'string') return term.value
    let validate = this.#validators.get(filter.parameter)
    if (validate === undefined) {
      const schema = { type: 'object', properties: { value: filter.schema }, required: ['value'] }
      validate = viewsetValidatorCompiler({ schema, method: 'GET', url: '', httpPart: 'querystring' })
      this.#validators.set(filter.parameter, validate)
    }
    const holder = { value: term.value }
    if (validate(holder) !== true) {
      const message = validate.errors?.[0]?.message ?? ''
      throw queryParameterError(term.name, `(in ${group}) ${message === '' ? 'is not valid' : message}`)
    }
    return holder.value
  }
}
