import type { ViewsetDialect } from '../dialect/dialect.js'
import { containsPattern } from '../dialect/dialect.js'
import { ViewsetErrors } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import type { Condition } from './condition.js'
import { checkedTerm } from './condition.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'

/** `?search=`, planned from the `searchFields` option. */
export interface SearchPlan {
  /** The `search` query parameter, or none when search is off. */
  readonly properties: Record<string, JsonSchema>
  /** The condition of a request, or `undefined` when it searches nothing. */
  condition (query: Record<string, unknown>): Condition | undefined
}

/** Checks `searchFields` (string columns of the schema) and plans `?search=`. */
export function planSearch (option: unknown, fields: ReadonlyMap<string, ScalarField>, dialect: ViewsetDialect): SearchPlan {
  if (option === undefined) return { properties: {}, condition: () => undefined }
  const strings = [...fields.values()].filter((field) => field.type === 'string').map((field) => field.name)
  if (!Array.isArray(option) || option.length === 0) throw new ViewsetErrors.InvalidOption('searchFields', `expected a non-empty array of string fields (${nameList(strings)})`)
  const names: string[] = []
  for (const name of option as unknown[]) {
    if (typeof name !== 'string' || !strings.includes(name)) {
      throw new ViewsetErrors.InvalidOption('searchFields', `${JSON.stringify(name)} is not a string column of the schema; searchable fields: ${nameList(strings)}`)
    }
    if (names.includes(name)) throw new ViewsetErrors.InvalidOption('searchFields', `"${name}" is listed twice`)
    names.push(name)
  }
  const properties: Record<string, JsonSchema> = {
    search: {
      type: 'string',
      description: `Case-insensitive substring match on ${names.join(' or ')}. \`%\`, \`_\` and \`\\\` match themselves.`,
      examples: ['bread'],
    },
  }
  return {
    properties,
    condition (query) {
      const term = query.search
      if (typeof term !== 'string' || term === '') return undefined
      const pattern = containsPattern(checkedTerm('search', term))
      return {
        shape: 'search',
        parameters: names.map(() => pattern),
        expression: (eb) => eb.or(names.map((name) => dialect.ilike(eb.ref(name), pattern))),
      }
    },
  }
}
