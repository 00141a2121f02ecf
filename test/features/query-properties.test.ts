// Issue 37's property test: random combinations of the allowed group terms give, on every dialect, the same ids in
// the same order as an in-memory evaluation of the same predicate (SQL's three-valued logic) over the same rows:
// columns first, then JSON paths (each scalar type, nested keys, ordering with the nulls rule, `?fields=` paths)
// and child counts under two tenants' rules, as plain filters and group terms, on offset and cursor pages.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import fc from 'fast-check'
import type { Arbitrary } from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { createViewset } from 'fastify-viewsets'
import { autoIncrement, dialects, testDatabase } from '../helpers/database.js'
import type { TestDatabase } from '../helpers/database.js'
import { testApp } from '../helpers/app.js'
import { createItemsTable, Item } from '../helpers/items.js'
import { ownerRule, secret } from '../helpers/tenants.js'

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

interface Term<R = Row> {
  readonly text: string
  readonly count: number
  evaluate(row: R): Truth
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

const negatable = <R>(term: Arbitrary<Term<R>>): Arbitrary<Term<R>> =>
  fc.tuple(fc.boolean(), term).map(([negated, inner]) => negated
    ? { text: `not.${inner.text}`, count: inner.count, evaluate: (row: R) => not(inner.evaluate(row)) }
    : inner)

/** The items of a group at `depth` (the top-level group is 1): terms, and groups while depth allows. */
function items<R> (terms: Arbitrary<Term<R>>, depth: number): Arbitrary<Array<Term<R>>> {
  const nested = depth < 3
    ? fc.oneof({ weight: 3, arbitrary: negatable(terms) }, { weight: 1, arbitrary: negatable(group(terms, depth + 1)) })
    : negatable(terms)
  return fc.array(nested, { minLength: 1, maxLength: 3 })
}

function group<R> (terms: Arbitrary<Term<R>>, depth: number): Arbitrary<Term<R>> {
  const operators: Arbitrary<'and' | 'or'> = fc.constantFrom('and', 'or')
  return fc.tuple(operators, items(terms, depth)).map(([operator, inner]) => ({
    text: `${operator}(${inner.map((item) => item.text).join(',')})`,
    count: inner.reduce((sum, item) => sum + item.count, 0),
    evaluate: (row: R) => combine(operator, inner.map((item) => item.evaluate(row))),
  }))
}

/** A top-level group parameter and its value. */
interface GroupParameter<R> extends Term<R> {
  readonly parameter: string
}

/** One top-level group parameter: `or=(…)`, `and=(…)`, `not.or=(…)`, `not.and=(…)`. */
function parameters<R> (terms: Arbitrary<Term<R>>): Arbitrary<GroupParameter<R>> {
  const names = fc.constantFrom('or', 'and', 'not.or', 'not.and')
  return fc.tuple(names, items(terms, 1)).map(([parameter, inner]) => {
    const [negated, operator] = parameter.startsWith('not.') ? [true, parameter.slice(4)] : [false, parameter]
    return {
      parameter,
      text: `(${inner.map((item) => item.text).join(',')})`,
      count: inner.reduce((sum, item) => sum + item.count, 0),
      evaluate: (row: R): Truth => {
        const value = combine(operator === 'and' ? 'and' : 'or', inner.map((item) => item.evaluate(row)))
        return negated ? not(value) : value
      },
    }
  })
}

/** At most 20 terms inside groups per request (the bound of issue 37 item 1). */
const withinBound = <R>(groups: ReadonlyArray<GroupParameter<R>>): boolean =>
  groups.reduce((sum, entry) => sum + entry.count, 0) <= 20

const requests = fc.array(parameters(terms), { minLength: 1, maxLength: 2 }).filter(withinBound)

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
          const query = groups.map(({ parameter, text }) => `${parameter}=${encodeURIComponent(text)}`).join('&')
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

// ---------------------------------------------------------------------------------------------------------------
// JSON paths and child counts: authors with a JSON document (`meta`) and books, each row its owner's (alice or bob).
// A request's caller is drawn too: a count counts only the caller's books, and a page holds only the caller's authors.

type Caller = 'alice' | 'bob'

interface Meta {
  color?: string | null
  rank?: number
  stock?: number
  active?: boolean
  size?: { width?: number, unit?: string }
}

interface Author {
  id: number
  name: string
  owner: Caller
  meta: Meta | null
}

const MetaSchema = Type.Object({
  color: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  rank: Type.Optional(Type.Number()),
  stock: Type.Optional(Type.Integer()),
  active: Type.Optional(Type.Boolean()),
  size: Type.Optional(Type.Object({ width: Type.Optional(Type.Number()), unit: Type.Optional(Type.String()) })),
})
const BookSchema = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  author_id: Type.Union([Type.Integer(), Type.Null()]),
})
const AuthorSchema = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  meta: Type.Union([MetaSchema, Type.Null()]),
  books: Type.Optional(Type.Array(BookSchema)),
})

// Missing keys, a JSON null, NULL documents, ties on every key, and counts that differ with the caller's rule.
const authors: Author[] = ([
  ['ann', 'alice', { color: 'red', rank: 2.5, stock: 3, active: true, size: { width: 10, unit: 'cm' } }],
  ['bea', 'alice', { color: 'blue', rank: 1, stock: 0, active: false, size: { width: 2.5 } }],
  ['cid', 'bob', { color: 'red', rank: 7, stock: 5, active: true, size: { width: 50, unit: 'cm' } }],
  ['dan', 'alice', {}],
  ['eve', 'bob', null],
  ['fay', 'alice', { color: 'green', rank: -1, stock: 10, active: false, size: { width: 30, unit: 'mm' } }],
  ['gus', 'alice', { color: null, rank: 2.5, stock: 3, active: true, size: { unit: 'mm' } }],
  ['hal', 'alice', { color: 'red', rank: 0, active: false }],
  ['ivy', 'bob', { color: 'blue', rank: 1, stock: 7, size: { width: 10, unit: 'cm' } }],
  ['jon', 'alice', null],
  ['kim', 'alice', { color: 'redwood', rank: 7, stock: 0, active: true, size: { width: 2.5, unit: 'cm' } }],
  ['lee', 'bob', { color: 'green', rank: -3.5, stock: 1 }],
  ['max', 'alice', { color: '50%_off', rank: 3, stock: 5, active: true, size: { width: 5, unit: 'in' } }],
] as const).map(([name, owner, meta], index) => ({ id: index + 1, name, owner, meta }))

// Each author's books by owner: [author, alice's, bob's].
const bookCounts: ReadonlyArray<readonly [number, number, number]> = [
  [1, 2, 1], [2, 1, 0], [3, 1, 2], [6, 3, 2], [7, 0, 1], [8, 1, 0], [9, 0, 1], [11, 2, 0], [12, 1, 1], [13, 4, 0],
]
const books = bookCounts.flatMap(([author, alice, bob]) => [
  ...Array.from({ length: alice }, (_, index) => ({ title: `a${author}-${index}`, owner: 'alice', author_id: author })),
  ...Array.from({ length: bob }, (_, index) => ({ title: `b${author}-${index}`, owner: 'bob', author_id: author })),
])

/** A row as the evaluator reads it: the author, and its books as the caller counts them. */
interface Counted extends Author {
  readonly books: number
}

function countedRows (caller: Caller): Counted[] {
  return authors.filter((author) => author.owner === caller).map((author) => {
    const entry = bookCounts.find(([id]) => id === author.id)
    return { ...author, books: entry === undefined ? 0 : entry[caller === 'alice' ? 1 : 2] }
  })
}

type Scalar = string | number | boolean

/** A value a term or a sort key reads: a JSON path (NULL when missing, JSON null or the document NULL) or a count. */
interface Subject {
  readonly name: string
  read(row: Counted): Scalar | null
}

const at = (...keys: string[]) => (row: Counted): Scalar | null => {
  let current: unknown = row.meta
  for (const key of keys) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) return null
    current = (current as Record<string, unknown>)[key]
  }
  return typeof current === 'string' || typeof current === 'number' || typeof current === 'boolean' ? current : null
}

const subjects = {
  color: { name: 'meta->color', read: at('color') },
  rank: { name: 'meta->rank', read: at('rank') },
  stock: { name: 'meta->stock', read: at('stock') },
  active: { name: 'meta->active', read: at('active') },
  width: { name: 'meta->size->width', read: at('size', 'width') },
  unit: { name: 'meta->size->unit', read: at('size', 'unit') },
  books: { name: 'books.count', read: (row: Counted) => row.books },
  name: { name: 'name', read: (row: Counted) => row.name },
} satisfies Record<string, Subject>

/** A term that is also a plain filter: its parameter and value as `?name__op=value` writes them. */
interface PathTerm extends Term<Counted> {
  readonly key: string
  readonly value: string
}

type Operator = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin' | 'contains' | 'startswith' | 'isnull'

const tests: Record<Exclude<Operator, 'in' | 'nin' | 'isnull'>, (value: Scalar, given: Scalar) => boolean> = {
  eq: (value, given) => value === given,
  ne: (value, given) => value !== given,
  gt: (value, given) => value > given,
  gte: (value, given) => value >= given,
  lt: (value, given) => value < given,
  lte: (value, given) => value <= given,
  contains: (value, given) => String(value).toLowerCase().includes(String(given).toLowerCase()),
  startswith: (value, given) => String(value).toLowerCase().startsWith(String(given).toLowerCase()),
}

const groupValue = (value: Scalar): string => (typeof value === 'string' ? quoted(value) : String(value))

/** `subject__op` with `given`, as a group term and as a plain filter, with its three-valued evaluation. */
function pathTerm (subject: Subject, op: Operator, given: Scalar | readonly Scalar[]): PathTerm {
  const key = op === 'eq' ? subject.name : `${subject.name}__${op}`
  const read = (row: Counted) => subject.read(row)
  if (Array.isArray(given)) {
    const list: readonly Scalar[] = given
    return {
      key,
      value: list.join(','),
      text: `${key}.(${list.map(groupValue).join(',')})`,
      count: 1,
      // A NULL is in no list and, as for `ne`, never matches `nin` either.
      evaluate: (row) => compare(read(row), (value) => list.includes(value) === (op === 'in')),
    }
  }
  const scalar = given as Scalar
  if (op === 'isnull') {
    return { key, value: String(scalar), text: `${key}.${scalar}`, count: 1, evaluate: (row) => (read(row) === null) === scalar }
  }
  const test = tests[op as keyof typeof tests]
  return {
    key,
    value: String(scalar),
    text: `${key}.${groupValue(scalar)}`,
    count: 1,
    evaluate: (row) => compare(read(row), (value) => test(value, scalar)),
  }
}

/** Terms of `subject` with one of `operators` and one of `values` (a list of 1 to 3 for `in` and `nin`). */
function termsOf (subject: Subject, operators: readonly Operator[], values: readonly Scalar[]): Arbitrary<PathTerm> {
  return fc.constantFrom(...operators).chain((op) => {
    if (op === 'isnull') return fc.boolean().map((value) => pathTerm(subject, op, value))
    if (op === 'in' || op === 'nin') {
      return fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: 3 })
        .map((list) => pathTerm(subject, op, list))
    }
    return fc.constantFrom(...values).map((value) => pathTerm(subject, op, value))
  })
}

// Lower-case ASCII colors and units only where compared for equality (every collation agrees on them); `%` and `_`
// must match themselves in substrings.
const pathTerms: Arbitrary<PathTerm> = fc.oneof(
  termsOf(subjects.color, ['eq', 'ne', 'in', 'nin'], ['red', 'blue', 'green', 'redwood', '50%_off', 'zzz']),
  termsOf(subjects.color, ['contains', 'startswith'], ['re', 'RE', 'e', 'B', 'wood', '%', '_', '0%_', '5_', 'zz']),
  termsOf(subjects.color, ['isnull'], []),
  termsOf(subjects.rank, ['eq', 'gt', 'gte', 'lt', 'lte'], [-3.5, -1, 0, 1, 2.5, 3, 7]),
  termsOf(subjects.rank, ['isnull'], []),
  termsOf(subjects.stock, ['eq', 'ne', 'gte', 'in', 'nin'], [0, 1, 3, 5, 10]),
  termsOf(subjects.active, ['eq', 'ne'], [true, false]),
  termsOf(subjects.width, ['gt', 'lt'], [2.5, 5, 10, 30]),
  termsOf(subjects.unit, ['eq', 'ne', 'isnull'], ['cm', 'mm', 'in']),
  termsOf(subjects.books, ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin'], [0, 1, 2, 3, 4])
)

const pathFilterFields = {
  'meta->color': ['eq', 'ne', 'in', 'nin', 'contains', 'startswith', 'isnull'],
  'meta->rank': ['eq', 'gt', 'gte', 'lt', 'lte', 'isnull'],
  'meta->stock': ['eq', 'ne', 'gte', 'in', 'nin'],
  'meta->active': ['eq', 'ne'],
  'meta->size->width': ['gt', 'lt'],
  'meta->size->unit': ['eq', 'ne', 'isnull'],
  'books.count': ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin'],
}
const orderable: readonly Subject[] = [
  subjects.rank, subjects.color, subjects.width, subjects.stock, subjects.books, subjects.name,
]

/** A sort key: its subject, direction and NULLs choice. */
interface SortKey {
  readonly subject: Subject
  readonly descending: boolean
  readonly nulls: 'first' | 'last' | undefined
}

const sortKeys: Arbitrary<SortKey[]> = fc.uniqueArray(
  fc.record({
    subject: fc.constantFrom(...orderable),
    descending: fc.boolean(),
    nulls: fc.constantFrom(undefined, 'first' as const, 'last' as const),
  }),
  { minLength: 0, maxLength: 2, selector: (key) => key.subject.name }
)

const sortText = (key: SortKey) => `${key.descending ? '-' : ''}${key.subject.name}${key.nulls === undefined ? '' : `.nulls${key.nulls}`}`

/** The order of `keys` then the key: NULL the largest value unless the key chose its place. */
function compareRows (keys: readonly SortKey[]) {
  return (a: Counted, b: Counted): number => {
    for (const { subject, descending, nulls } of keys) {
      const left = subject.read(a)
      const right = subject.read(b)
      if (left === null && right === null) continue
      const first = nulls ?? (descending ? 'first' : 'last')
      if (left === null) return first === 'first' ? -1 : 1
      if (right === null) return first === 'first' ? 1 : -1
      const order = left < right ? -1 : left > right ? 1 : 0
      if (order !== 0) return descending ? -order : order
    }
    return a.id - b.id
  }
}

/** `?fields=`: every field, or the key with JSON paths, answered inside `meta`. */
const fieldSets: ReadonlyArray<readonly string[] | undefined> = [
  undefined, ['id', 'meta->color'], ['id', 'meta->size->width', 'meta->rank'], ['meta->active', 'id', 'name'],
]

/** The row `fields` answers for an author: `meta` cut down to the named paths (a missing key absent). */
function projected (row: Counted, fields: readonly string[]): Record<string, unknown> {
  const answer: Record<string, unknown> = { id: row.id }
  if (fields.includes('name')) answer.name = row.name
  const paths = fields.filter((field) => field.startsWith('meta->')).map((field) => field.split('->').slice(1))
  if (row.meta === null) return { ...answer, meta: null }
  const kept: Record<string, unknown> = {}
  for (const keys of paths) {
    let source: unknown = row.meta
    for (const key of keys) {
      source = typeof source === 'object' && source !== null && Object.hasOwn(source, key)
        ? (source as Record<string, unknown>)[key]
        : undefined
    }
    if (source === undefined) continue // a missing key is absent
    let target = kept
    for (const key of keys.slice(0, -1)) target = (target[key] ??= {}) as Record<string, unknown>
    target[keys[keys.length - 1] ?? ''] = source
  }
  return { ...answer, meta: kept }
}

const pathRequests = fc.record({
  caller: fc.constantFrom<Caller>('alice', 'bob'),
  plain: fc.uniqueArray(pathTerms, { minLength: 0, maxLength: 3, selector: (term) => term.key }),
  groups: fc.array(parameters(pathTerms), { minLength: 0, maxLength: 2 }).filter(withinBound),
  order: sortKeys,
  fields: fc.constantFrom(...fieldSets),
  limit: fc.integer({ min: 1, max: 4 }),
})

/** The column types a JSON document is stored in, by dialect: each JSON type, and JSON in text. */
const documentTypes = { sqlite: ['json', 'text'], postgres: ['jsonb', 'json', 'text'], mysql: ['json', 'text'] }

async function createAuthorsTables (database: TestDatabase, documentType: string): Promise<void> {
  const [idType, id] = autoIncrement(database.dialect)
  await database.db.schema.createTable('qp_authors').addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(64)', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('meta', documentType as 'json')
    .execute()
  await database.db.schema.createTable('qp_books').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('author_id', 'integer', (column) => column.references('qp_authors.id'))
    .execute()
  for (const { name, owner, meta } of authors) {
    await database.db.insertInto('qp_authors')
      .values({ name, owner, meta: meta === null ? null : JSON.stringify(meta) }).execute()
  }
  await database.db.insertInto('qp_books').values([...books, { title: 'orphan', owner: 'alice', author_id: null }])
    .execute()
}

/** Follows rel="next" from `url`: every page's rows, in order, and the count header of each. */
async function walk (app: FastifyInstance, url: string, headers: Record<string, string>) {
  const rows: unknown[] = []
  const totals = new Set<string>()
  let next: string | undefined = url
  while (next !== undefined) {
    const page: Awaited<ReturnType<FastifyInstance['inject']>> = await app.inject({ url: next, headers })
    assert.equal(page.statusCode, 200, `${decodeURIComponent(next)}: ${page.body}`)
    rows.push(...page.json())
    totals.add(String(page.headers['x-total-count']))
    const link = /<([^>]+)>; rel="next"/.exec(String(page.headers.link ?? ''))?.[1]
    next = link === undefined ? undefined : link.slice(link.indexOf('/paged'))
    assert.ok(rows.length <= authors.length, 'the pages end')
  }
  return { rows, totals: [...totals] }
}

for (const dialect of dialects) {
  describe(`JSON paths and child counts against an in-memory evaluation (${dialect.name})`, () => {
    for (const documentType of documentTypes[dialect.name]) {
      test(`random filters, groups, orders and fields give the same rows, on offset and cursor pages (${documentType})`, async (t) => {
        const database = await testDatabase(t, dialect)
        await createAuthorsTables(database, documentType)
        const app = testApp(t)
        await app.register(fastifyJwt, { secret })
        const rules = {
          methods: ['LIST'],
          protectedMethods: ['LIST'],
          scope: ownerRule,
        }
        const authorOptions = {
          db: database.db,
          table: 'qp_authors',
          schema: AuthorSchema,
          ...rules,
          filterFields: pathFilterFields,
          orderingFields: orderable.map((subject) => subject.name),
          relatedConfig: { prefetchRelated: { books: { table: 'qp_books', foreignKey: 'author_id', orderBy: 'id' } } },
        }
        await app.register(createViewset(authorOptions as never), { prefix: '/authors' })
        await app.register(createViewset({ ...authorOptions, pagination: 'cursor' } as never), { prefix: '/paged' })
        await app.register(createViewset({ db: database.db, table: 'qp_books', schema: BookSchema, ...rules } as never),
          { prefix: '/books' })
        await app.ready()
        const bearer = (sub: Caller) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
        await fc.assert(
          fc.asyncProperty(pathRequests, async ({ caller, plain, groups, order, fields, limit }) => {
            const parts = [
              ...plain.map(({ key, value }) => `${key}=${encodeURIComponent(value)}`),
              ...groups.map(({ parameter, text }) => `${parameter}=${encodeURIComponent(text)}`),
              ...(order.length === 0 ? [] : [`order_by=${encodeURIComponent(order.map(sortText).join(','))}`]),
              ...(fields === undefined ? [] : [`fields=${encodeURIComponent(fields.join(','))}`]),
              'count=true',
            ]
            const query = parts.join('&')
            const expected = countedRows(caller)
              .filter((row) => plain.every((term) => term.evaluate(row) === true))
              .filter((row) => groups.every((entry) => entry.evaluate(row) === true))
              .sort(compareRows(order))
            const headers = bearer(caller)
            const response = await app.inject({ url: `/authors?${query}&limit=100`, headers })
            const described = `${caller}: ${decodeURIComponent(query)}`
            assert.equal(response.statusCode, 200, `${described}: ${response.body}`)
            const body: Array<Record<string, unknown>> = response.json()
            assert.deepEqual(body.map((row) => row.id), expected.map((row) => row.id), described)
            assert.equal(response.headers['x-total-count'], String(expected.length), described)
            if (fields !== undefined) {
              assert.deepEqual(body, expected.map((row) => projected(row, fields)), `${described}: the fields`)
            }
            const paged = await walk(app, `/paged?${query}&limit=${limit}`, headers)
            assert.deepEqual(paged.rows.map((row) => (row as { id: number }).id), expected.map((row) => row.id),
              `${described}: cursor pages of ${limit}`)
            assert.deepEqual(paged.totals, [String(expected.length)], `${described}: the count on every page`)
          }),
          { numRuns: Number(process.env.QUERY_RUNS ?? 60), seed: Number(process.env.QUERY_SEED ?? 37) }
        )
        const after = await database.db.selectFrom('qp_books').select('id').execute()
        assert.equal(after.length, books.length + 1, 'reads change nothing')
      })
    }
  })
}
