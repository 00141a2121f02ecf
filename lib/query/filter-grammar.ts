import { queryParameterError } from './condition.js'

// The grammar of `?or=(…)`, `?and=(…)`, `?not.or=(…)` and `?not.and=(…)`: PostgREST's, with our `field__op` names.
// Hand-written as a small recursive descent over a string whose length the schema bounds first: one pass, no
// backtracking, every bound checked as it is met, each error naming the parameter or the term.

/** The most terms all the groups of one request may hold (plain filters are not counted). */
export const maxGroupTerms = 20

/** The deepest nesting of groups: the top-level group counts as 1. */
export const maxGroupDepth = 3

/** The longest value of one group parameter, in characters: checked by the schema before anything is parsed. */
export const maxGroupLength = 4000

/** One `field__op.value` of a group: `value` is the list of an `in`/`nin` term, else its text. */
export interface TermNode {
  readonly kind: 'term'
  readonly negated: boolean
  /** The filter parameter the term names (`price__lt`, `author.name__contains`, or `name` for `eq`). */
  readonly name: string
  readonly value: string | readonly string[]
}

/** `or(…)` or `and(…)`, possibly negated, holding at least one item. */
export interface GroupNode {
  readonly kind: 'group'
  readonly negated: boolean
  readonly operator: 'and' | 'or'
  readonly items: ReadonlyArray<TermNode | GroupNode>
}

/** What the parser asks of the filters: whether a name is a filter parameter (the one lookup plain filters use). */
export interface TermNames {
  has(parameter: string): boolean
  /** Whether the filter parameter takes a list (`__in`, `__nin`). */
  takesList(parameter: string): boolean
  /** The 400 of a term whose name is no filter parameter. */
  unknown(parameter: string, name: string): Error
}

/** Characters that end an unquoted value or name. */
const delimiters = new Set([',', '(', ')', '"'])

/** A parser over one parameter's value; `budget` counts terms across the request's groups. */
class GroupParser {
  #index = 0
  readonly #text: string
  readonly #parameter: string
  readonly #names: TermNames
  readonly #budget: { terms: number }

  constructor (text: string, parameter: string, names: TermNames, budget: { terms: number }) {
    this.#text = text
    this.#parameter = parameter
    this.#names = names
    this.#budget = budget
  }

  #fail (message: string): never {
    throw queryParameterError(this.#parameter, message)
  }

  #expect (character: string): void {
    if (this.#text[this.#index] !== character) {
      const found = this.#index < this.#text.length ? `"${this.#text[this.#index] ?? ''}"` : 'the end'
      this.#fail(`expected "${character}" at character ${this.#index + 1}, found ${found}`)
    }
    this.#index++
  }

  /** The whole value: one parenthesized list of items, and nothing after it. */
  top (operator: 'and' | 'or', negated: boolean): GroupNode {
    const group = this.#items(operator, negated, 1)
    if (this.#index !== this.#text.length) this.#fail(`unexpected text after the closing ")" at ${this.#index + 1}`)
    return group
  }

  /** `(item,item,…)`, at `depth` (1 for the top-level group). */
  #items (operator: 'and' | 'or', negated: boolean, depth: number): GroupNode {
    if (depth > maxGroupDepth) {
      this.#fail(`nests groups ${depth} deep; at most ${maxGroupDepth} levels are allowed (the top-level group is 1)`)
    }
    this.#expect('(')
    if (this.#text[this.#index] === ')') this.#fail('holds an empty group; a group needs at least one term')
    const items: Array<TermNode | GroupNode> = []
    for (;;) {
      items.push(this.#item(depth))
      if (this.#text[this.#index] !== ',') break
      this.#index++
    }
    this.#expect(')')
    return { kind: 'group', negated, operator, items }
  }

  /** A term or a nested group, either possibly after `not.`. */
  #item (depth: number): TermNode | GroupNode {
    let negated = false
    if (this.#text.startsWith('not.', this.#index)) {
      negated = true
      this.#index += 4
    }
    const start = this.#index
    const head = this.#run()
    const opens = this.#text[this.#index] === '('
    if ((head === 'or' || head === 'and') && opens) return this.#items(head, negated, depth + 1)
    return this.#term(head, start, negated)
  }

  /** The unquoted characters from here to the next delimiter. */
  #run (): string {
    const start = this.#index
    while (this.#index < this.#text.length && !delimiters.has(this.#text[this.#index] ?? '')) this.#index++
    return this.#text.slice(start, this.#index)
  }

  /** `name.value`: the name is the longest filter parameter that the head starts with, before a `.`. */
  #term (head: string, start: number, negated: boolean): TermNode {
    this.#budget.terms++
    if (this.#budget.terms > maxGroupTerms) {
      this.#fail(`holds more than ${maxGroupTerms} terms across the request's groups; at most ${maxGroupTerms}`)
    }
    let name: string | undefined
    for (let dot = head.indexOf('.'); dot !== -1; dot = head.indexOf('.', dot + 1)) {
      const candidate = head.slice(0, dot)
      if (this.#names.has(candidate)) name = candidate
    }
    if (name === undefined) throw this.#names.unknown(this.#parameter, guessedName(head, start))
    const inline = head.slice(name.length + 1)
    const next = this.#text[this.#index]
    let value: string | readonly string[] = inline
    if (this.#names.takesList(name)) {
      if (inline !== '' || next !== '(') {
        throw queryParameterError(name, `(in ${this.#parameter}) expects a list in parentheses, such as ${name}.(1,2)`)
      }
      value = this.#list(name)
    } else if (next === '"' && inline === '') {
      value = this.#quoted()
    } else if (next === '(' || next === '"') {
      throw queryParameterError(name, `(in ${this.#parameter}): write a value holding , ( ) or " in double quotes`)
    }
    return { kind: 'term', negated, name, value }
  }

  /** `(a,"b,c",d)`: the elements of an `in`/`nin` term. */
  #list (name: string): string[] {
    this.#expect('(')
    const values: string[] = []
    for (;;) {
      values.push(this.#text[this.#index] === '"' ? this.#quoted() : this.#run())
      if (this.#text[this.#index] !== ',') break
      this.#index++
    }
    if (this.#text[this.#index] !== ')') {
      throw queryParameterError(name, `(in ${this.#parameter}): the list is not closed by ")"`)
    }
    this.#index++
    return values
  }

  /** `"…"` with `\` escaping the next character. */
  #quoted (): string {
    this.#expect('"')
    let value = ''
    for (;;) {
      const character = this.#text[this.#index]
      if (character === undefined) this.#fail('has a quoted value with no closing "')
      this.#index++
      if (character === '"') return value
      if (character === '\\') {
        const escaped = this.#text[this.#index]
        if (escaped === undefined) this.#fail('ends inside a quoted value')
        value += escaped
        this.#index++
      } else {
        value += character
      }
    }
  }
}

/** The name a term seems to give (`price__lt` of `price__lt.5`), for the 400 of an unknown one. */
function guessedName (head: string, start: number): string {
  const operator = head.indexOf('__')
  const dot = head.indexOf('.', operator === -1 ? 0 : operator)
  const name = dot === -1 ? head : head.slice(0, dot)
  return name === '' ? `the term at character ${start + 1}` : name
}

/**
 * Parses one group parameter's value (`(price__lt.5,or(a.1,not.b.2))`) into its top-level group, counting its terms
 * into `budget` (shared by the request's groups). Throws a 400 naming the parameter (for the syntax and the bounds)
 * or the term (an unknown name, a list where none goes).
 *
 * @example
 * ```ts
 * parseGroup('(price__lt.5,name__contains.bread)', 'or', 'or', false, names, { terms: 0 })
 * // { kind: 'group', operator: 'or', negated: false, items: [{ kind: 'term', name: 'price__lt', value: '5', … }, …] }
 * ```
 */
export function parseGroup (
  text: string,
  parameter: string,
  operator: 'and' | 'or',
  negated: boolean,
  names: TermNames,
  budget: { terms: number }
): GroupNode {
  return new GroupParser(text, parameter, names, budget).top(operator, negated)
}
