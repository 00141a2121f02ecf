import Fastify from 'fastify'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { ExpressionBuilder, Kysely } from 'kysely'
// Types only: the library itself is passed in, so that one process loads one build of it (this commit's
// dist/, or a baseline's).
import type * as Library from 'fastify-viewsets'
import { Author, Book, BookWithRelations, sizes, VersionedBook } from '../data.js'
import type { BenchDB } from '../data.js'
import type { ScenarioId } from '../scenarios.js'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { naiveOnce } from './hand-written.js'

// The viewsets of the `viewsets` systems: the plain books viewset, one that eager-loads relations, and one
// over versioned_books whose ETag is its version column (the GET without a hash). Each of them runs over a
// build of the library it is given, so that `viewsets-baseline` serves the same viewsets from an older build.

/** What the viewsets need of fastify-viewsets: this commit's build, or the one of `--baseline <ref>`. */
export type ViewsetsLibrary = Pick<typeof Library, 'createViewset' | 'createDatabase'>

function databaseUrl (target: DatabaseTarget): string {
  return target.kind === 'sqlite' ? `sqlite:${target.file}` : target.url
}

/**
 * Registers a plugin on a scratch app first (and runs its check there), so that a feature a build lacks
 * marks its scenarios n/a instead of failing the whole server.
 */
async function tryPlugin (
  plugin: FastifyPluginAsync,
  check?: (scratch: FastifyInstance) => Promise<string | undefined>
): Promise<string | undefined> {
  const scratch = Fastify({ logger: false })
  try {
    await scratch.register(plugin, { prefix: '/probe' })
    await scratch.ready()
    return await check?.(scratch)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  } finally {
    await scratch.close().catch(() => {})
  }
}

/** A viewset that some scenarios need and that a build may lack. */
interface OptionalViewset {
  /** The option it depends on, named in the n/a reason. */
  feature: string
  scenarios: ScenarioId[]
  prefix: string
  /** A fresh plugin each time: one for the scratch app, one for the server. */
  plugin: () => FastifyPluginAsync
  /** Proof that the build honours the option, for options an older build would ignore without a word. */
  check?: (scratch: FastifyInstance) => Promise<string | undefined>
}

/** A book with its author only. */
const BookWithAuthor = Type.Object({ ...Book.properties, author: Type.Optional(Type.Union([Author, Type.Null()])) })

/**
 * The viewsets of the row-rule scenarios: `/books-scoped` (GET, a scope on books), `/books-author` (LIST with the
 * author) and `/books-author-scoped` (the same with a scope on books, and one on authors through `rulesFrom`). The
 * rules admit every seeded row, so that each answer is the unscoped one: the difference is the rules' cost alone.
 */
function scopedViewsets (
  db: Kysely<BenchDB>,
  createViewset: ViewsetsLibrary['createViewset']
): OptionalViewset[] {
  const books = (eb: ExpressionBuilder<BenchDB, 'books'>) => eb('author_id', '<=', sizes.authors)
  // A LIST's rule the database answers from an index, as a tenant's `org = ?` over an (org, id) index is: an
  // unindexed range (`author_id <= n`) makes SQLite scan in key order and skip rows, which the cost classification
  // rightly sends to a read worker (analysis.md, "scoped paths, third session"), so that scenario measured the hop.
  const booksInKeyRange = (eb: ExpressionBuilder<BenchDB, 'books'>) => eb('id', '>=', 1)
  const authors = { scope: (eb: ExpressionBuilder<BenchDB, 'authors'>) => eb('id', '<=', sizes.authors) }
  const withAuthor = (rulesFrom?: typeof authors) => ({
    selectRelated: { author: { table: 'authors', foreignKey: 'author_id', ...(rulesFrom === undefined ? {} : { rulesFrom }) } },
  }) as const
  return [
    {
      feature: 'scope',
      scenarios: ['get-scoped'],
      prefix: '/books-scoped',
      plugin: () => createViewset({ db, table: 'books', schema: Book, methods: ['GET'], withoutTokens: true, scope: { GET: books } }),
    },
    {
      feature: 'relatedConfig',
      scenarios: ['list-author'],
      prefix: '/books-author',
      plugin: () => createViewset({ db, table: 'books', schema: BookWithAuthor, methods: ['LIST'], relatedConfig: withAuthor() }),
    },
    {
      feature: 'scope',
      scenarios: ['list-author-scoped'],
      prefix: '/books-author-scoped',
      plugin: () => createViewset({
        db,
        table: 'books',
        schema: BookWithAuthor,
        methods: ['LIST'],
        withoutTokens: true,
        scope: { LIST: booksInKeyRange },
        relatedConfig: withAuthor(authors),
      }),
    },
  ]
}

/**
 * Issue 43's rule scenarios (`/books-ruled`): the books viewset under a row rule the key's index serves (every seeded
 * row passes it, so that the answers are the unruled ones) and a field rule that hides `title`, for every method.
 */
function ruledViewset (db: Kysely<BenchDB>, createViewset: ViewsetsLibrary['createViewset']): OptionalViewset {
  return {
    feature: 'scope and fieldAccess',
    scenarios: ['get-ruled', 'list10-ruled', 'list100-ruled', 'filter-ruled', 'patch-ruled', 'delete-ruled'],
    prefix: '/books-ruled',
    plugin: () => createViewset({
      db,
      table: 'books',
      schema: Book,
      methods: ['LIST', 'GET', 'PATCH', 'DELETE'],
      filterFields: { author_id: ['eq'] },
      orderingFields: ['id', 'title', 'year', 'price'],
      withoutTokens: true,
      scope: (eb: ExpressionBuilder<BenchDB, 'books'>) => eb('id', '>=', 1),
      fieldAccess: () => ({ hidden: ['title'] }),
    }),
    // A build without fieldAccess ignores it: the GET must not serve the hidden field.
    check: async (scratch) => {
      const response = await scratch.inject({ method: 'GET', url: '/probe/1' })
      return response.statusCode === 200 && !('title' in response.json<Record<string, unknown>>())
        ? undefined
        : `this build serves the hidden field (GET answers ${response.statusCode}: ${response.body.slice(0, 80)})`
    },
  }
}

/** An author with its books, written with it (`writable: true`). */
const AuthorWithBooks = Type.Object({ ...Author.properties, books: Type.Optional(Type.Array(Book)) })

/**
 * The nested POST's viewsets (issue 38 item 2): `/authors-nested`, whose books are written through a books viewset
 * of their own (named by `rulesFrom`, since other viewsets serve books too).
 */
function nestedViewsets (db: Kysely<BenchDB>, createViewset: ViewsetsLibrary['createViewset']): OptionalViewset {
  return {
    feature: 'writable',
    scenarios: ['nested-post'],
    prefix: '/authors-nested',
    plugin: () => async (app) => {
      await app.register(createViewset({ db, table: 'books', schema: Book, methods: ['POST'] }), { prefix: '/books' })
      const books = { table: 'books', foreignKey: 'author_id', writable: true, rulesFrom: `${app.prefix}/books` } as const
      await app.register(createViewset({
        db, table: 'authors', schema: AuthorWithBooks, methods: ['POST'], relatedConfig: { prefetchRelated: { books } },
      }))
    },
  }
}

/**
 * The viewsets of the benchmark over a Kysely instance, however it was made; returns the scenarios it cannot
 * serve, and notes on those it serves differently.
 */
export async function registerViewsets (
  app: FastifyInstance,
  db: Kysely<BenchDB>,
  { createViewset }: Pick<ViewsetsLibrary, 'createViewset'>
): Promise<Required<Pick<SystemServer, 'unsupported' | 'notes'>>> {
  const unsupported: SystemServer['unsupported'] = {
    'eager-n1': naiveOnce,
    'get-untagged': 'a viewset always sends an ETag on GET: its cost is GET by id against the versionField row',
  }
  const books = (bulk: ReadonlyArray<'PATCH_MANY'> = []) =>
    createViewset({
      db,
      table: 'books',
      schema: Book,
      methods: ['LIST', 'GET', 'POST', 'PATCH', 'DELETE', ...bulk],
      filterFields: { author_id: ['eq'] },
      orderingFields: ['id', 'title', 'year', 'price'],
    })
  // The bulk PATCH by filter is a method of the books viewset: a build without PATCH_MANY makes its scenario n/a.
  const bulk = await tryPlugin(books(['PATCH_MANY']))
  if (bulk !== undefined) unsupported['patch-many'] = `PATCH_MANY: ${bulk}`
  await app.register(books(bulk === undefined ? ['PATCH_MANY'] : []), { prefix: '/books' })
  // A build before ETags (issue 17) answers GET without one: still GET by id, but hashing nothing, so its figure says
  // so.
  const untagged = await tryPlugin(books(), async (scratch) => {
    const response = await scratch.inject({ method: 'GET', url: '/probe/1' })
    return response.headers.etag === undefined
      ? "this build sends no ETag on GET (it predates them): its GET hashes nothing, the other systems' GET hashes the body"
      : undefined
  })
  const notes: Partial<Record<ScenarioId, string>> = untagged === undefined ? {} : { get: untagged }

  const optional: OptionalViewset[] = [
    {
      feature: 'versionField',
      scenarios: ['get-versioned'],
      prefix: '/versioned-books',
      plugin: () =>
        createViewset({
          db,
          table: 'versioned_books',
          schema: VersionedBook,
          methods: ['GET'],
          versionField: 'version',
        }),
      // A build before versionField ignores the unknown option and hashes the body: the ETag must be the version.
      check: async (scratch) => {
        const response = await scratch.inject({ method: 'GET', url: '/probe/1' })
        const version: unknown =
          response.statusCode === 200 ? response.json<{ version?: unknown }>().version : undefined
        const etag = response.headers.etag
        return etag === `"${String(version)}"`
          ? undefined
          : `this build ignores it (GET answers ${response.statusCode} with ETag ${String(etag)}, not the row's version)`
      },
    },
    {
      feature: 'relatedConfig',
      scenarios: ['eager'],
      prefix: '/books-full',
      plugin: () =>
        createViewset({
          db,
          table: 'books',
          schema: BookWithRelations,
          methods: ['LIST'],
          relatedConfig: {
            selectRelated: { author: { table: 'authors', foreignKey: 'author_id' } },
            prefetchRelated: {
              tags: { table: 'tags', through: { table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' } },
            },
          },
        }),
    },
    ...scopedViewsets(db, createViewset),
    nestedViewsets(db, createViewset),
    ruledViewset(db, createViewset),
    {
      // A row's history (issue 39): GET and PATCH on the books with every write recorded.
      feature: 'history',
      scenarios: ['get-history', 'patch-history'],
      prefix: '/books-history',
      plugin: () => createViewset({
        db, table: 'books', schema: Book, methods: ['GET', 'PATCH'], history: { createTable: true },
      }),
    },
    {
      feature: 'AGGREGATE',
      scenarios: ['aggregate'],
      prefix: '/books-aggregate',
      plugin: () => createViewset({
        db,
        table: 'books',
        schema: Book,
        methods: ['AGGREGATE'],
        filterFields: { author_id: ['eq'] },
        groupByFields: ['year'],
        aggregateFields: { price: ['sum'] },
      }),
    },
  ]
  for (const viewset of optional) {
    const failure = await tryPlugin(viewset.plugin(), viewset.check)
    if (failure === undefined) await app.register(viewset.plugin(), { prefix: viewset.prefix })
    else for (const id of viewset.scenarios) unsupported[id] = `${viewset.feature}: ${failure}`
  }
  return { unsupported, notes }
}

/** A server with the benchmark's viewsets over `createDatabase`, both from the given build. */
export async function buildViewsets (
  target: DatabaseTarget,
  { createDatabase, createViewset }: ViewsetsLibrary
): Promise<SystemServer> {
  const db = createDatabase<BenchDB>(databaseUrl(target))
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => {
    await db.destroy()
  })
  return { app, ...(await registerViewsets(app, db, { createViewset })) }
}
