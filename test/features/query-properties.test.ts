// Issue 37's property test: random combinations of the allowed group terms give, on every dialect, the same ids in
// the same order as an in-memory evaluation of the same predicate (SQL's three-valued logic) over the same rows.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { Arbitrary } from 'fast-check'
import { createViewset } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'

/** SQL's truth values: `null` is unknown. */
type Truth = boolean | null

interface Row {
  name: string
  price: number
  description: string | null
  in_stock: boolean
}

// Lower-case ASCII words without trailing blanks: equality and order agree under every dialect's collation.
const words = ['bread', 'brown bread', 'butter', 'salt, fine', 'rye "dark"', 'milk', 'cheese (aged)', 'a\\b']
const rows: Row[] = [
  ...words.map((name, index) => ({
    name,
    price: [2, 3, 5, 10, 1, 3, 4.5, 7][index] ?? 0,
    description: [null, 'fresh', 'dark', null, 'salted', 'dark', 'fresh', null][index] ?? null,
    in_stock: index % 3 !== 0,
  })),
]

interface Term {
  readonly text: string
  readonly count: number
  evaluate(row: Row): Truth
}

const quoted = (value: string): string => `"${value.replace(/["\\]/g, '\\$&')}"`
const not = (value: Truth): Truth => (value === null ? null : !value)
const compare = <T>(value: T | null, test: (value: T) => boolean): Truth => (value === null ? null : test(value))

const texts = fc.constantFrom(...words, 'fresh', 'dark', 'salted', 'zzz')
const prefixes = fc.constantFrom('b', 'BR', 'sa', 'c', 'x', 'D', '"', ',')
const prices: Arbitrary<number> = fc.constantFrom(1, 2, 3, 4.5, 5, 6, 10)

const terms: Arbitrary<Term> = fc.oneof(
  texts.map((value): Term => ({ text: `name.${quoted(value)}`, count: 1, evaluate: (row) => row.name === value })),
  texts.map((value): Term => ({ text: `name__ne.${quoted(value)}`, count: 1, evaluate: (row) => row.name !== value })),
  prefixes.map((value): Term => ({
    text: `name__startswith.${quoted(value)}`,
    count: 1,
    evaluate: (row) => row.name.toLowerCase().startsWith(value.toLowerCase()),
  })),
  prefixes.map((value): Term => ({
    text: `description__contains.${quoted(value)}`,
    count: 1,
    evaluate: (row) => compare(row.description, (text) => text.toLowerCase().includes(value.toLowerCase())),
  })),
  fc.uniqueArray(texts, { minLength: 1, maxLength: 3 }).map((values): Term => ({
    text: `name__in.(${values.map(quoted).join(',')})`,
    count: 1,
    evaluate: (row) => values.includes(row.name),
  })),
  prices.map((value): Term => ({ text: `price__lt.${value}`, count: 1, evaluate: (row) => row.price < value })),
  prices.map((value): Term => ({ text: `price__gte.${value}`, count: 1, evaluate: (row) => row.price >= value })),
  fc.uniqueArray(prices, { minLength: 1, maxLength: 3 }).map((values): Term => ({
    text: `price__nin.(${values.join(',')})`,
    count: 1,
    evaluate: (row) => !values.includes(row.price),
  })),
  texts.map((value): Term => ({
    text: `description.${quoted(value)}`,
    count: 1,
    evaluate: (row) => compare(row.description, (text) => text === value),
  })),
  fc.boolean().map((value): Term => ({
    text: `description__isnull.${value}`,
    count: 1,
    evaluate: (row) => (row.description === null) === value,
  })),
  fc.boolean().map((value): Term => ({ text: `in_stock.${value}`, count: 1, evaluate: (row) => row.in_stock === value }))
)

/** AND and OR under three-valued logic. */
function combine (operator: 'and' | 'or', values: Truth[]): Truth {
  const decisive = operator !== 'and'
  if (values.includes(decisive)) return decisive
  return values.includes(null) ? null : !decisive
}

const negatable = (term: Arbitrary<Term>): Arbitrary<Term> =>
  fc.tuple(fc.boolean(), term).map(([negated, inner]) => negated
    ? { text: `not.${inner.text}`, count: inner.count, evaluate: (row: Row) => not(inner.evaluate(row)) }
    : inner)

/** The items of a group at `depth` (the top-level group is 1): terms, and groups while depth allows. */
function items (depth: number): Arbitrary<Term[]> {
  const nested = depth < 3
    ? fc.oneof({ weight: 3, arbitrary: negatable(terms) }, { weight: 1, arbitrary: negatable(group(depth + 1)) })
    : negatable(terms)
  return fc.array(nested, { minLength: 1, maxLength: 3 })
}

function group (depth: number): Arbitrary<Term> {
  return fc.tuple(fc.constantFrom('and', 'or') as Arbitrary<'and' | 'or'>, items(depth)).map(([operator, inner]) => ({
    text: `${operator}(${inner.map((item) => item.text).join(',')})`,
    count: inner.reduce((sum, item) => sum + item.count, 0),
    evaluate: (row: Row) => combine(operator, inner.map((item) => item.evaluate(row))),
  }))
}

/** One top-level group parameter: `or=(…)`, `and=(…)`, `not.or=(…)`, `not.and=(…)`. */
const parameters = fc.tuple(fc.constantFrom('or', 'and', 'not.or', 'not.and'), items(1)).map(([parameter, inner]) => {
  const [negated, operator] = parameter.startsWith('not.') ? [true, parameter.slice(4)] : [false, parameter]
  return {
    parameter,
    value: `(${inner.map((item) => item.text).join(',')})`,
    count: inner.reduce((sum, item) => sum + item.count, 0),
    evaluate: (row: Row): Truth => {
      const value = combine(operator === 'and' ? 'and' : 'or', inner.map((item) => item.evaluate(row)))
      return negated ? not(value) : value
    },
  }
})

const requests = fc
  .array(parameters, { minLength: 1, maxLength: 2 })
  .filter((groups) => groups.reduce((sum, entry) => sum + entry.count, 0) <= 20)

for (const dialect of dialects) {
  describe(`filter groups against an in-memory evaluation (${dialect.name})`, () => {
    test('random combinations give the same rows in the same order', async (t) => {
      const database = await testDatabase(t, dialect)
      await createItemsTable(database)
      // better-sqlite3 binds no booleans; SQLite stores them as 1 and 0.
      const flag = (value: boolean) => (database.dialect === 'sqlite' ? Number(value) : value)
      const stored = rows.map((row) => ({ ...row, in_stock: flag(row.in_stock) }))
      await database.db.insertInto('items').values(stored).execute()
      const app = testApp(t)
      const filterFields = {
        name: ['eq', 'ne', 'startswith', 'in'],
        price: ['lt', 'gte', 'nin'],
        description: ['eq', 'contains', 'isnull'],
        in_stock: ['eq'],
      } as const
      await app.register(
        createViewset({ db: database.db, table: 'items', schema: Item, filterFields, orderingFields: ['price'] }),
        { prefix: '/items' }
      )
      await app.ready()
      // In price order, then id (the seed's order): the tie-break every LIST has.
      const ordered = rows
        .map((row, index) => ({ ...row, id: index + 1 }))
        .sort((a, b) => a.price - b.price || a.id - b.id)
      await fc.assert(
        fc.asyncProperty(requests, async (groups) => {
          const query = groups.map(({ parameter, value }) => `${parameter}=${encodeURIComponent(value)}`).join('&')
          const response = await app.inject({ url: `/items?${query}&order_by=price&limit=100&count=true` })
          assert.equal(response.statusCode, 200, `${query}: ${response.body}`)
          const expected = ordered.filter((row) => groups.every((entry) => entry.evaluate(row) === true))
          const ids = response.json().map((row: { id: number }) => row.id)
          assert.deepEqual(ids, expected.map((row) => row.id), decodeURIComponent(query))
          assert.equal(response.headers['x-total-count'], String(expected.length))
        }),
        { numRuns: Number(process.env.QUERY_RUNS ?? 60), seed: Number(process.env.QUERY_SEED ?? 37) }
      )
      const after = await database.db.selectFrom('items').select('name').orderBy('id').execute()
      assert.deepEqual(after.map((row) => row.name), words)
    })
  })
}
