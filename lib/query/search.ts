import type { ViewsetDialect } from '../dialect/dialect.js'
import { containsPattern } from '../sql.js'
import { invalidOption } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import { isList } from '../schema/object-schema.js'
import type { Condition } from './condition.js'
import { checkedTerm, queryParameterError } from './condition.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'
import type { PathRules, RelatedPath, RelatedRoot } from './related-paths.js'
import type { ScopeCondition } from './scope.js'
import { noNulPattern } from '../schema/list-patterns.js'
import { existsThrough, pathRules, relatedColumn, resolvePath, rulesShape } from './related-paths.js'

/** `?search=`, planned from the `searchFields` option. */
export interface SearchPlan {
  /** The `search` query parameter, or none when search is off. */
  readonly properties: Record<string, JsonSchema>
  /** The condition of a request, or `undefined` when it searches nothing; relation paths under its `rules`. */
  condition(query: Record<string, unknown>, rules?: PathRules): Condition | undefined
}

/** Characters as Ajv's `maxLength` counts them: code points, a lone surrogate counting as one. */
function codePoints (text: string): number {
  let count = 0
  for (let i = 0; i < text.length; i++, count++) {
    const code = text.charCodeAt(i)
    if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++
  }
  return count
}

/**
 * A substring term of at most `maxLength` characters (`maxSearchLength`), as a 400 naming `parameter`
 * otherwise. The query-string schema already says so; this holds when a subclass's `listQuery` redefines
 * the parameter without the bound.
 */
export function boundedTerm (parameter: string, term: string, maxLength: number): string {
  // UTF-16 units are never fewer than code points: most terms need no count.
  if (term.length > maxLength && codePoints(term) > maxLength) {
    throw queryParameterError(parameter, `must NOT have more than ${maxLength} characters`)
  }
  return checkedTerm(parameter, term)
}

/**
 * Checks `searchFields` (string columns of the schema) and plans `?search=`. The term is at most
 * `maxLength` characters: the schema says so, so OpenAPI documents it and validation refuses a longer one
 * (Ajv counts code points, so `é` or `🍞` count as one) with a 400 that names `search`.
 */
export function planSearch (
  option: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  dialect: ViewsetDialect,
  maxLength: number,
  related?: RelatedRoot
): SearchPlan {
  if (option === undefined) return { properties: {}, condition: () => undefined }
  const { names, paths } = searchedFields(option, fields, related)
  const properties: Record<string, JsonSchema> = {
    search: {
      type: 'string',
      maxLength,
      // A NUL is refused (checkedTerm): the document says so.
      pattern: noNulPattern,
      description: `Case-insensitive substring match on ${names.join(' or ')}, at most ${maxLength} characters. ` +
        '`%`, `_` and `\\` match themselves.',
      examples: ['bread'],
    },
  }
  const searchShape = `search(${names.join(',')})` // its fields: a LIST narrowed by field rules searches fewer
  return {
    properties,
    condition (query, rules) {
      const term = query.search
      if (typeof term !== 'string' || term === '') return undefined
      const pattern = containsPattern(boundedTerm('search', term, maxLength))
      // A path searches only the related rows its tables' rules admit; their values bind before the pattern.
      const ruled = new Map<string, ScopeCondition[][]>()
      let shape = searchShape
      const parameters: unknown[] = []
      for (const name of names) {
        const path = paths.get(name)
        const hops = path === undefined ? [] : pathRules(path, rules)
        ruled.set(name, hops)
        for (const hop of hops) {
          shape += `:${rulesShape(hop)}`
          for (const rule of hop) parameters.push(...rule.parameters)
        }
        parameters.push(pattern)
      }
      return {
        shape,
        parameters,
        // A parent whose relation is NULL has no related row: its own fields are still searched.
        expression: (eb) =>
          eb.or(
            names.map((name) => {
              const path = paths.get(name)
              return path === undefined || related === undefined
                ? dialect.syntax.ilike(eb.ref(name), pattern)
                : existsThrough(
                  eb, path, related.table, dialect.syntax.ilike(eb.ref(relatedColumn(path)), pattern), ruled.get(name)
                )
            })
          ),
      }
    },
  }
}

/** Checks `searchFields`: string columns, or relation paths to a string field, each once. */
function searchedFields (
  option: unknown,
  fields: ReadonlyMap<string, ScalarField>,
  related: RelatedRoot | undefined
): { names: string[], paths: Map<string, RelatedPath> } {
  const strings = [...fields.values()].filter((field) => field.type === 'string').map((field) => field.name)
  if (!isList(option) || option.length === 0) {
    invalidOption('searchFields', `expected a non-empty array of string fields (${nameList(strings)})`)
  }
  const names: string[] = []
  // A relation path (`author.name`) searches the related row: many-to-one only, one value per row.
  const paths = new Map<string, RelatedPath>()
  for (const name of option) {
    const path =
      typeof name === 'string' && name.includes('.') && related !== undefined
        ? resolvePath('searchFields', name, related, true)
        : undefined
    if (path !== undefined && path.field.type !== 'string') {
      invalidOption(
        'searchFields',
        `"${name}" is not a string field of the schema of "${path.hops.map((hop) => hop.field).join('.')}"`
      )
    }
    if (typeof name !== 'string' || (path === undefined && !strings.includes(name))) {
      invalidOption(
        'searchFields',
        `${JSON.stringify(name)} is not a string column of the schema; searchable fields: ${nameList(strings)}`
      )
    }
    if (names.includes(name)) invalidOption('searchFields', `"${name}" is listed twice`)
    names.push(name)
    if (path !== undefined) paths.set(name, path)
  }
  return { names, paths }
}
