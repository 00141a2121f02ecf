import { pick, seedRows, sizes } from './data.js'
import type { SeedRows } from './data.js'

/**
 * The systems, in the order they are shown: the ceiling, the hand-written peer, ours over `createDatabase`,
 * Platformatic, and ours over a Kysely instance the user built.
 */
export const systemNames = ['raw', 'kysely', 'viewsets', 'platformatic', 'viewsets-own-kysely'] as const

/**
 * The `viewsets` viewsets over the library built at another commit (`--baseline <git-ref>`): the build before
 * a change, measured in the same interleaved rounds as the build after it. Only a run that names a ref has it,
 * shown after the others.
 */
export const baselineSystem = 'viewsets-baseline'
export type SystemName = (typeof systemNames)[number] | typeof baselineSystem
/** Every system a server process can run, the baseline included. */
export const allSystemNames: readonly SystemName[] = [...systemNames, baselineSystem]

/** This library's systems: each is compared with the others (ratios `viewsets/raw`, `viewsets-own-kysely/raw`, ...). */
export const ourSystems = ['viewsets', 'viewsets-own-kysely'] as const satisfies readonly SystemName[]
export type OurSystem = (typeof ourSystems)[number]

export const scenarioIds = [
  'get',
  'get-versioned',
  'get-untagged',
  'get-scoped',
  'get-history',
  'list10',
  'list100',
  'filter',
  'or-filter',
  'aggregate',
  'eager',
  'eager-n1',
  'list-author',
  'list-author-scoped',
  'post',
  'nested-post',
  'patch',
  'patch-history',
  'patch-many',
  'delete',
  'get-ruled',
  'list10-ruled',
  'list100-ruled',
  'filter-ruled',
  'patch-ruled',
  'delete-ruled',
] as const
export type ScenarioId = (typeof scenarioIds)[number]

/** One HTTP request of a scenario. */
export interface ScenarioRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  path: string
  body?: Record<string, unknown>
}

/** Where a scenario's requests draw their values from. */
export interface Draw {
  /** Numbers in [0, 1), the same sequence for every system. */
  next: () => number
  /** The id of a row that exists and that no other request deletes (DELETE scenario only). */
  doomed: () => number
}

export interface Scenario {
  id: ScenarioId
  title: string
  /** The scenario writes (inserts, updates or deletes): the servers' first warm-up leaves it out, so that the reads see
   * the seeded table. */
  writes?: true
  /** The scenario deletes rows: the runner fills a batch of rows before each measurement (see doomed-rows.ts). */
  deletes?: true
  /** Builds one request. */
  request(system: SystemName, draw: Draw): ScenarioRequest
  /** Checks one answer before the load starts: a message when it is wrong. */
  check(
    system: SystemName,
    request: ScenarioRequest,
    status: number,
    body: unknown,
    headers: Headers,
  ): string | undefined
}

const camel = (system: SystemName, field: string): string =>
  system === 'platformatic' ? field.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()) : field

type Json = Record<string, unknown>
const isList = (body: unknown, length?: number): body is Json[] =>
  Array.isArray(body) &&
  (length === undefined || body.length === length) &&
  body.every((row) => typeof row === 'object' && row !== null)
const expectStatus = (status: number, expected: number): string | undefined =>
  status === expected ? undefined : `status ${status}, expected ${expected}`
const listCheck = (length: number) => (_system: SystemName, _request: ScenarioRequest, status: number, body: unknown) =>
  expectStatus(status, 200) ??
  (isList(body, length) && body.every((row, index) => row.id === index + 1)
    ? undefined
    : `expected books 1 to ${length} in key order`)
const idOf = (request: ScenarioRequest) => Number(request.path.split('/').pop())
// Every system but Platformatic (which has none) sends a strong ETag on GET, POST and PATCH, except on
// /books-untagged. A baseline built before ETags sends none: it is measured all the same, and its cell
// carries a note that says so.
const etagCheck = (system: SystemName, request: ScenarioRequest, headers: Headers) =>
  system === 'platformatic' ||
  request.path.startsWith('/books-untagged/') ||
  (system === baselineSystem && !headers.has('etag')) ||
  /^"[^"]+"$/.test(headers.get('etag') ?? '')
    ? undefined
    : 'expected a strong ETag'
const getCheck = (system: SystemName, request: ScenarioRequest, status: number, body: unknown, headers: Headers) =>
  expectStatus(status, 200) ??
  ((body as Json).id === idOf(request) ? undefined : 'expected the requested book') ??
  etagCheck(system, request, headers)
const eagerCheck = (_system: SystemName, _request: ScenarioRequest, status: number, body: unknown) => {
  if (status !== 200) return `status ${status}`
  if (!isList(body, 50)) return 'expected 50 books'
  const complete = body.every(
    (book) =>
      typeof book.author === 'object' &&
      book.author !== null &&
      (book.author as Json).id === book.author_id &&
      Array.isArray(book.tags) &&
      book.tags.length === sizes.tagsPerBook
  )
  return complete ? undefined : 'expected each book with its author and its tags'
}

const authorCheck = (system: SystemName, request: ScenarioRequest, status: number, body: unknown, headers: Headers) =>
  listCheck(10)(system, request, status, body) ??
  (isList(body) && body.every((book) => (book.author as Json | null)?.id === book.author_id)
    ? undefined
    : 'expected each book with its author') ??
  (headers.has('content-type') ? undefined : 'expected a content type')

// Every other system pages in key order (ties broken by the key) by default. Platformatic adds no ORDER BY
// unless asked: its LIST would be `SELECT … LIMIT 10`, an unordered scan that returns books 1 to 10 only because
// the table was just seeded, and is not a stable page. It is asked for the key order, to do the same work.
const keyOrder = (system: SystemName) => (system === 'platformatic' ? '&orderby.id=asc' : '')

/** A rule-scenario answer: the field rule hid `title` from every book. */
const untitled = (body: unknown): string | undefined => {
  const rows = Array.isArray(body) ? body : [body]
  return rows.every((row) => typeof row === 'object' && row !== null && !('title' in row))
    ? undefined
    : 'the field rule was not applied (title is served)'
}

let books: SeedRows['books'] | undefined
const seededBooks = () => (books ??= seedRows().books)

const scenarios: Scenario[] = [
  {
    id: 'get',
    title: 'GET by id',
    request: (_system, { next }) => ({ method: 'GET', path: `/books/${pick(next, sizes.books)}` }),
    check: getCheck,
  },
  {
    // With the tag from a version column instead of a hash of the body: the difference is the ETag's cost.
    id: 'get-versioned',
    title: 'GET by id, versionField ETag (no hash)',
    request: (_system, { next }) => ({ method: 'GET', path: `/versioned-books/${pick(next, sizes.books)}` }),
    check: getCheck,
  },
  {
    id: 'get-untagged',
    title: 'GET by id, no ETag',
    request: (_system, { next }) => ({ method: 'GET', path: `/books-untagged/${pick(next, sizes.books)}` }),
    check: getCheck,
  },
  {
    id: 'list10',
    title: 'LIST 10',
    request: (system) => ({ method: 'GET', path: `/books?limit=10${keyOrder(system)}` }),
    check: listCheck(10),
  },
  {
    id: 'list100',
    title: 'LIST 100',
    request: (system) => ({ method: 'GET', path: `/books?limit=100${keyOrder(system)}` }),
    check: listCheck(100),
  },
  {
    id: 'filter',
    title: 'LIST filter + order',
    request: (system, { next }) => {
      const author = pick(next, sizes.authors)
      return system === 'platformatic'
        ? { method: 'GET', path: `/books?where.authorId.eq=${author}&orderby.year=desc${keyOrder(system)}&limit=10` }
        : { method: 'GET', path: `/books?author_id=${author}&order_by=-year&limit=10` }
    },
    check: (system, request, status, body) => {
      if (status !== 200) return `status ${status}`
      const author = Number(/(?:author_id|authorId\.eq)=(\d+)/.exec(request.path)?.[1])
      if (!isList(body)) return 'expected a list'
      if (!body.every((book) => book[camel(system, 'author_id')] === author)) return 'the filter was not applied'
      if (!body.every((book, index) => index === 0 || (body[index - 1]?.year as number) >= (book.year as number))) {
        return 'the order was not applied'
      }
      return undefined
    },
  },
  {
    id: 'or-filter',
    title: 'LIST OR filter + order',
    request: (system, { next }) => {
      const a = pick(next, sizes.authors)
      const b = pick(next, sizes.authors)
      // The hand-written systems take the two ids as one parameter; viewsets as a group of two terms.
      return ourSystems.some((name) => name === system) || system === baselineSystem
        ? { method: 'GET', path: `/books?or=(author_id.${a},author_id.${b})&order_by=-year&limit=10` }
        : { method: 'GET', path: `/books?authors=${a},${b}&order_by=-year&limit=10` }
    },
    check: (system, request, status, body) => {
      if (status !== 200) return `status ${status}`
      const ids = /author_id\.(\d+),author_id\.(\d+)|authors=(\d+),(\d+)/.exec(request.path) ?? []
      const authors = new Set(ids.slice(1).filter((id) => id !== undefined).map(Number))
      if (!isList(body)) return 'expected a list'
      if (!body.every((book) => authors.has(book[camel(system, 'author_id')] as number))) return 'the filter was not applied'
      if (!body.every((book, index) => index === 0 || (body[index - 1]?.year as number) >= (book.year as number))) {
        return 'the order was not applied'
      }
      return undefined
    },
  },
  {
    id: 'aggregate',
    title: 'AGGREGATE count + sum by year, one author',
    // The same URL on every system that serves it: ours a viewset with AGGREGATE, raw a hand-written GROUP BY.
    request: (_system, { next }) => ({
      method: 'GET',
      path: `/books-aggregate/aggregate?author_id=${pick(next, sizes.authors)}&group_by=year&count=true&sum=price`,
    }),
    check: (_system, _request, status, body) => {
      if (status !== 200) return `status ${status}`
      // An author may have no book: no groups.
      if (!isList(body)) return 'expected a list of groups'
      const groups = body.every((group) => typeof group.year === 'number' && typeof group.count === 'number' &&
        group.count >= 1 && typeof (group.sum as Json | undefined)?.price === 'number')
      if (!groups) return 'expected { year, count, sum: { price } } groups'
      const years = body.map((group) => group.year as number)
      return years.every((year, index) => index === 0 || (years[index - 1] ?? 0) < year) ? undefined : 'expected years in order'
    },
  },
  {
    id: 'eager',
    title: 'LIST 50 + author + tags',
    request: () => ({ method: 'GET', path: '/books-full?limit=50' }),
    check: eagerCheck,
  },
  {
    id: 'eager-n1',
    title: 'LIST 50 + author + tags, naive N+1',
    request: () => ({ method: 'GET', path: '/books-n1?limit=50' }),
    check: eagerCheck,
  },
  {
    // The row rules' cost (issue 35): the same GET with a `scope` ANDed into its statement.
    id: 'get-scoped',
    title: 'GET by id, scoped',
    request: (_system, { next }) => ({ method: 'GET', path: `/books-scoped/${pick(next, sizes.books)}` }),
    check: getCheck,
  },
  {
    // A row's history (issue 39): the same GET on a viewset that keeps one; reads run no history statement.
    id: 'get-history',
    title: 'GET by id, history on',
    request: (_system, { next }) => ({ method: 'GET', path: `/books-history/${pick(next, sizes.books)}` }),
    check: getCheck,
  },
  {
    id: 'list-author',
    title: 'LIST 10 + author',
    request: () => ({ method: 'GET', path: '/books-author?limit=10' }),
    check: authorCheck,
  },
  {
    // A scope on books, and on authors through the relation: the rule follows the rows into the relation load.
    id: 'list-author-scoped',
    title: 'LIST 10 + author, scoped',
    request: () => ({ method: 'GET', path: '/books-author-scoped?limit=10' }),
    check: authorCheck,
  },
  {
    id: 'post',
    title: 'POST',
    writes: true,
    request: (system, { next }) => ({
      method: 'POST',
      path: '/books',
      body: {
        [camel(system, 'author_id')]: pick(next, sizes.authors),
        title: `New book ${pick(next, 1e6)}`,
        year: 1950 + pick(next, 75),
        price: pick(next, 10_000) / 100,
      },
    }),
    check: (system, request, status, body, headers) =>
      expectStatus(status, system === 'platformatic' ? 200 : 201) ??
      (typeof (body as Json).id === 'number' && (body as Json).title === request.body?.title
        ? undefined
        : 'expected the created book') ??
      etagCheck(system, request, headers),
  },
  {
    // A nested write (issue 38 item 2): an author and three books in one transaction, answered with the books.
    id: 'nested-post',
    title: 'POST author + 3 books (nested)',
    writes: true,
    request: (_system, { next }) => {
      const n = pick(next, 1e6)
      const books = [1, 2, 3].map((i) => ({ title: `Nested ${n}.${i}`, year: 1950 + pick(next, 75), price: i }))
      return { method: 'POST', path: '/authors-nested', body: { name: `Author ${n}`, email: `a${n}@x.org`, books } }
    },
    check: (_system, request, status, body) => {
      if (status !== 201) return `status ${status}`
      const books = (body as Json).books
      return Array.isArray(books) && books.length === 3 && (body as Json).name === request.body?.name
        ? undefined
        : 'expected the created author with its three books'
    },
  },
  {
    id: 'patch',
    title: 'PATCH',
    writes: true,
    request: (system, { next }) => {
      const id = pick(next, sizes.books)
      const price = pick(next, 10_000) / 100
      if (system !== 'platformatic') return { method: 'PATCH', path: `/books/${id}`, body: { price } }
      // Platformatic has no partial update: its PUT /:id requires every field, so it gets the row as seeded with the
      // new price.
      const [, authorId, title, year] = seededBooks()[id - 1] as SeedRows['books'][number]
      return { method: 'PUT', path: `/books/${id}`, body: { authorId, title, year, price } }
    },
    check: (system, request, status, body, headers) =>
      expectStatus(status, 200) ??
      ((body as Json).price === request.body?.price && typeof (body as Json).title === 'string'
        ? undefined
        : 'expected the updated book') ??
      etagCheck(system, request, headers),
  },
  {
    // The same PATCH recording each write in the history table, in its transaction (issue 39).
    id: 'patch-history',
    title: 'PATCH, history on',
    writes: true,
    request: (_system, { next }) => ({
      method: 'PATCH', path: `/books-history/${pick(next, sizes.books)}`, body: { price: pick(next, 10_000) / 100 },
    }),
    check: (system, request, status, body, headers) =>
      expectStatus(status, 200) ??
      ((body as Json).price === request.body?.price ? undefined : 'expected the updated book') ??
      etagCheck(system, request, headers),
  },
  {
    // A bulk update by filter (issue 38): the books of one author (two on average) get a new price; a count answers.
    id: 'patch-many',
    title: 'bulk PATCH by filter',
    writes: true,
    request: (_system, { next }) => ({
      method: 'PATCH',
      path: `/books?author_id=${pick(next, sizes.authors)}`,
      body: { price: pick(next, 10_000) / 100 },
    }),
    check: (_system, _request, status, body) =>
      expectStatus(status, 200) ??
      (typeof (body as Json).affected === 'number' ? undefined : 'expected {"affected": N}'),
  },
  {
    id: 'delete',
    title: 'DELETE',
    writes: true,
    deletes: true,
    request: (_system, { doomed }) => ({ method: 'DELETE', path: `/books/${doomed()}` }),
    // Platformatic answers 200 with the deleted row; the others 204.
    check: (system, _request, status) => expectStatus(status, system === 'platformatic' ? 200 : 204),
  },
  // Issue 43's rule targets: the same paths on `/books-ruled`, under a row rule (`id >= 1`, which the key's index
  // serves and every seeded row passes) and a field rule that hides `title`; raw applies the same WHERE and drops
  // the same field by hand.
  {
    id: 'get-ruled',
    title: 'GET by id, row + field rule',
    request: (_system, { next }) => ({ method: 'GET', path: `/books-ruled/${pick(next, sizes.books)}` }),
    check: (system, request, status, body, headers) =>
      getCheck(system, request, status, body, headers) ?? untitled(body),
  },
  {
    id: 'list10-ruled',
    title: 'LIST 10, row + field rule',
    request: () => ({ method: 'GET', path: '/books-ruled?limit=10' }),
    check: (system, request, status, body) => listCheck(10)(system, request, status, body) ?? untitled(body),
  },
  {
    id: 'list100-ruled',
    title: 'LIST 100, row + field rule',
    request: () => ({ method: 'GET', path: '/books-ruled?limit=100' }),
    check: (system, request, status, body) => listCheck(100)(system, request, status, body) ?? untitled(body),
  },
  {
    id: 'filter-ruled',
    title: 'LIST filter + order, row + field rule',
    request: (_system, { next }) => ({
      method: 'GET',
      path: `/books-ruled?author_id=${pick(next, sizes.authors)}&order_by=-year&limit=10`,
    }),
    check: (_system, request, status, body) => {
      if (status !== 200) return `status ${status}`
      const author = Number(/author_id=(\d+)/.exec(request.path)?.[1])
      if (!isList(body) || !body.every((book) => book.author_id === author)) return 'the filter was not applied'
      return untitled(body)
    },
  },
  {
    id: 'patch-ruled',
    title: 'PATCH, row + field rule',
    writes: true,
    request: (_system, { next }) => ({
      method: 'PATCH',
      path: `/books-ruled/${pick(next, sizes.books)}`,
      body: { price: pick(next, 10_000) / 100 },
    }),
    check: (system, request, status, body, headers) =>
      expectStatus(status, 200) ??
      ((body as Json).price === request.body?.price ? undefined : 'expected the updated book') ??
      etagCheck(system, request, headers) ??
      untitled(body),
  },
  {
    id: 'delete-ruled',
    title: 'DELETE, row rule',
    writes: true,
    deletes: true,
    request: (_system, { doomed }) => ({ method: 'DELETE', path: `/books-ruled/${doomed()}` }),
    check: (_system, _request, status) => expectStatus(status, 204),
  },
]

export const scenarioById = new Map<ScenarioId, Scenario>(scenarios.map((scenario) => [scenario.id, scenario]))
