import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { after, describe, test } from 'node:test'
import type { TestContext } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import type { Kysely } from 'kysely'
import { createDatabase } from 'fastify-viewsets'
import { dialects, testDatabase } from '../helpers/database.js'
import type { TestDialect } from '../helpers/database.js'
import type { TableCatalog } from '../../lib/dialect/shared/catalog.js'
import { planGeneration } from '../../lib/generate/plan.js'
import { withoutPassword } from '../../lib/generate/header.js'
import { build as buildGenerated } from '../../examples/generated/app.js'
import { migrate } from '../../examples/relations/migrations.js'
import { testApp } from '../helpers/app.js'

const run = promisify(execFile)
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
// Inside the repository (test-output/ is ignored), so that the generated code resolves 'fastify-viewsets' to this
// package.
const output = join(root, 'test-output', `generate-${randomBytes(4).toString('hex')}`)
after(async () => {
  await rm(output, { recursive: true, force: true })
})

/** Six tables and a view: every column type served, the three relation kinds, a composite-key link table, an enum,
 * defaults. */
function schemaSql (dialect: TestDialect['name']): string[] {
  const id = {
    sqlite: 'integer primary key autoincrement',
    postgres: 'serial primary key',
    mysql: 'integer primary key auto_increment',
  }[dialect]
  const status = {
    sqlite: "text not null default 'active' check (status in ('active', 'retired'))",
    postgres: "author_status not null default 'active'",
    mysql: "enum('active', 'retired') not null default 'active'",
  }[dialect]
  const created = {
    sqlite: "timestamp not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    postgres: 'timestamptz not null default now()',
    mysql: 'datetime(3) not null default current_timestamp(3)',
  }[dialect]
  const stamp = { sqlite: 'timestamp', postgres: 'timestamptz', mysql: 'datetime(3)' }[dialect]
  const json = { sqlite: 'json', postgres: 'jsonb', mysql: 'json' }[dialect]
  const double = dialect === 'sqlite' ? 'real' : 'double precision'
  return [
    ...(dialect === 'postgres' ? ["create type author_status as enum ('active', 'retired')"] : []),
    `create table publishers (id ${id}, name varchar(100) not null unique, founded integer)`,
    `create table authors (id ${id}, name varchar(100) not null, email varchar(200) not null unique, born date,
      rating numeric(4, 2), active boolean not null default true, status ${status}, profile ${json}, created_at ${created})`,
    `create table books (id ${id}, title varchar(200) not null, author_id integer references authors (id), publisher_id integer references publishers (id),
      pages smallint, price ${double}, isbn bigint, published_at ${stamp})`,
    'create index books_title on books (title)',
    `create table tags (id ${id}, label varchar(50) not null unique)`,
    `create table book_tags (book_id integer not null references books (id) on delete cascade, tag_id integer not null references tags (id) on delete cascade,
      primary key (book_id, tag_id))`,
    `create table reviews (id ${id}, book_id integer not null references books (id) on delete cascade, stars smallint not null default 5, body text)`,
    'create view book_titles as select id, title from books',
  ]
}

async function generate (url: string, out: string, ...extra: string[]) {
  return await command(url, out, '--key', 'book_titles=id', ...extra)
}

async function command (url: string, out: string, ...extra: string[]) {
  return await run(
    process.execPath,
    [join(root, 'bin', 'fastify-viewsets.js'), 'generate', '--url', url, '--out', out, ...extra],
    {
      cwd: root,
      env: { ...process.env, FASTIFY_VIEWSETS_SOURCE: '1' },
    }
  )
}

async function filesOf (out: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  for (const name of ['db.ts', 'schemas.ts', 'viewsets.ts', 'server.ts']) {
    files[name] = await readFile(join(out, name), 'utf8')
  }
  return files
}

/** A database for the command to read: the test's own (a temp file on SQLite, so that a child process reaches it). */
async function database (t: TestContext, dialect: TestDialect): Promise<{ db: Kysely<any>; url: string }> {
  if (dialect.name !== 'sqlite') return await testDatabase(t, dialect)
  await mkdir(output, { recursive: true })
  const url = `sqlite:${join(output, `sqlite-${randomBytes(4).toString('hex')}.db`)}`
  const db = createDatabase<any>(url)
  t.after(() => db.destroy())
  return { db, url }
}

async function crud (
  app: FastifyInstance,
  path: string,
  created: Record<string, unknown>,
  patch: Record<string, unknown>
) {
  const posted = await app.inject({ method: 'POST', url: path, payload: created })
  assert.equal(posted.statusCode, 201, `${path}: ${posted.body}`)
  const row = posted.json()
  for (const [key, value] of Object.entries(created)) assert.deepEqual(row[key], value, `${path} ${key}`)
  const one = await app.inject({ method: 'GET', url: `${path}/${row.id}` })
  assert.equal(one.statusCode, 200, one.body)
  const patched = await app.inject({ method: 'PATCH', url: `${path}/${row.id}`, payload: patch })
  assert.equal(patched.statusCode, 200, patched.body)
  for (const [key, value] of Object.entries(patch)) assert.deepEqual(patched.json()[key], value, `${path} ${key}`)
  const list = await app.inject({ method: 'GET', url: `${path}?limit=100` })
  assert.equal(list.statusCode, 200, list.body)
  assert.ok(list.json().some((entry: { id: unknown }) => entry.id === row.id))
  return row as Record<string, unknown> & { id: number }
}

const generated = new Map<string, string>()

/** A table as the catalog describes it, for the naming rules. */
function table (
  name: string,
  columns: string[],
  foreignKeys: Array<[string, string]> = [],
  primaryKey = ['id']
): TableCatalog {
  return {
    name,
    view: false,
    columns: columns.map((column) => ({
      name: column,
      type: 'integer',
      declared: 'integer',
      nullable: column !== 'id',
      default: undefined,
      generated: false,
      autoIncrement: column === 'id',
      maxLength: undefined,
      enumValues: undefined,
      json: false,
    })),
    primaryKey,
    unique: [],
    indexes: [primaryKey],
    foreignKeys: foreignKeys.map(([column, target]) => ({ columns: [column], table: target, references: ['id'] })),
  }
}

test('relation names: fk column without _id, the other table, and <fk column>_<table> on a collision', () => {
  const plan = planGeneration(
    'sqlite',
    [
      table('people', ['id']),
      table(
        'documents',
        ['id', 'author_id', 'reviewer', 'owner_id', 'owner'],
        [
          ['author_id', 'people'],
          ['reviewer', 'people'],
          ['owner_id', 'people'],
        ]
      ),
      table(
        'pairs',
        ['left_id', 'right_id'],
        [
          ['left_id', 'people'],
          ['right_id', 'documents'],
        ],
        ['left_id', 'right_id']
      ),
      table('events', ['day', 'person_id', 'count'], [['person_id', 'people']], ['day', 'person_id']),
    ],
    new Map()
  )
  const names = (name: string) =>
    plan.served
      .find((served) => served.catalog.name === name)
      ?.relations.map((relation) => `${relation.kind}:${relation.name}`)
  assert.deepEqual(names('documents'), [
    'many-to-one:author',
    'many-to-one:reviewer_people',
    'many-to-one:owner_id_people',
    'many-to-many:people',
  ])
  assert.deepEqual(names('people'), [
    'one-to-many:author_id_documents',
    'one-to-many:reviewer_documents',
    'one-to-many:owner_id_documents',
    // events, keyed by (day, person_id), is served now, with its foreign key (issue 39)
    'one-to-many:events',
    'many-to-many:right_id_documents',
  ])
  assert.deepEqual(plan.links, ['pairs'])
  // Composite keys are served (issue 39): the link table by its two ends, events by (day, person_id).
  assert.deepEqual(plan.skipped, [])
  assert.deepEqual(
    plan.served.filter((entry) => entry.key.length > 1).map((entry) => [entry.catalog.name, entry.key]),
    [['pairs', ['left_id', 'right_id']], ['events', ['day', 'person_id']]]
  )
})

test('a composite-key table is served by its composite key, or by the unique column --key names', () => {
  const events = {
    ...table('events', ['day', 'person_id', 'code'], [], ['day', 'person_id']),
    unique: [['code']],
  }
  const code = events.columns.map((column) => (column.name === 'code' ? { ...column, nullable: false } : column))
  const keyed = { ...events, columns: code }
  const plan = planGeneration('sqlite', [keyed], new Map())
  assert.deepEqual(plan.skipped, [])
  assert.deepEqual(plan.served.map((entry) => [entry.catalog.name, entry.key]), [['events', ['day', 'person_id']]])
  const served = planGeneration('sqlite', [keyed], new Map([['events', 'code']]))
  assert.deepEqual(served.served.map((entry) => [entry.catalog.name, entry.primaryKey]), [['events', 'code']])
})

for (const dialect of dialects) {
  describe(`generate on ${dialect.name}`, () => {
    test('writes typed code that serves every table, reruns identically and keeps edited files', async (t) => {
      const { db, url } = await database(t, dialect)
      for (const statement of schemaSql(dialect.name)) await sql.raw(statement).execute(db)
      const out = join(output, dialect.name)
      generated.set(dialect.name, out)

      const { stdout } = await generate(url, out)
      assert.match(stdout, /served: authors, book_tags, book_titles, books, publishers, reviews, tags/)
      assert.match(stdout, /link tables \(the through of many-to-many relations\): book_tags/)
      const files = await filesOf(out)
      for (const text of Object.values(files)) {
        assert.match(text, /^\/\/ Generated by fastify-viewsets \d+\.\d+\.\d+/)
        assert.match(text, /\/\/ Content hash: sha256:[0-9a-f]{64}/)
        assert.doesNotMatch(text, /\b20\d\d-\d\d-\d\d\b/, 'no date in the output')
        const code = text
          .split('\n')
          .filter((line) => !/^\s*(?:\/\/|\/\*\*|\*)/.test(line))
          .join('\n')
        assert.doesNotMatch(code, /[\w)\]] as (?:unknown|any|never|[A-Z{])/, 'no casts')
      }
      assert.match(files['db.ts'] ?? '', /export interface AuthorsTable \{/)
      assert.match(files['db.ts'] ?? '', /status: Generated<'active' \| 'retired'>/)
      assert.match(files['schemas.ts'] ?? '', /export const Authors = Type\.Object\(\{/)
      assert.match(
        files['schemas.ts'] ?? '',
        /created_at: Type\.Optional\(Type\.String\(\{ format: 'date-time', readOnly: true \}\)\)/
      )
      assert.match(files['schemas.ts'] ?? '', /name: Type\.String\(\{ maxLength: 100 \}\)/)
      assert.match(
        files['schemas.ts'] ?? '',
        /use Type\.String\(\) here\.\n {2}isbn: Type\.Optional\(.*Type\.Integer\(\{ minimum: -9007199254740991, maximum: 9007199254740991\b/
      )
      assert.match(
        files['viewsets.ts'] ?? '',
        /tags: \{ table: 'tags', through: \{ table: 'book_tags', sourceKey: 'book_id', targetKey: 'tag_id' \} \}/
      )

      // Without --key, the view is skipped and listed; --tables narrows the tables.
      const narrowed = await command(
        url,
        join(output, `${dialect.name}-narrow`),
        '--tables',
        'authors,book_titles,books'
      )
      assert.match(narrowed.stdout, /served: authors, books\n/)
      assert.match(narrowed.stdout, /skipped book_titles: a view: name its key with --key book_titles=<column>/)
      assert.doesNotMatch(
        await readFile(join(output, `${dialect.name}-narrow`, 'db.ts'), 'utf8'),
        /TagsTable|PublishersTable/
      )

      // The same database gives the same bytes; --check then finds nothing to do.
      const same = await generate(url, out)
      assert.match(same.stdout, /unchanged .*schemas\.ts/)
      assert.deepEqual(await filesOf(out), files)
      assert.match((await generate(url, out, '--check')).stdout, /unchanged .*viewsets\.ts/)

      // The database changes after the user edited schemas.ts: the untouched files are updated, the edited one is
      // kept and its new version written beside it; --check lists both and exits 1; --force overwrites.
      await writeFile(join(out, 'schemas.ts'), `${files['schemas.ts'] ?? ''}\n// mine\n`)
      await sql.raw('create table shelves (id integer primary key, label varchar(20) not null)').execute(db)
      await assert.rejects(generate(url, out, '--check'), (error: { code?: number; stdout?: string }) => {
        assert.equal(error.code, 1)
        assert.match(error.stdout ?? '', /differs, edited since generated: .*schemas\.ts/)
        assert.match(error.stdout ?? '', /differs: .*db\.ts/)
        return true
      })
      assert.doesNotMatch(await readFile(join(out, 'db.ts'), 'utf8'), /ShelvesTable/, '--check writes nothing')
      const rerun = await generate(url, out)
      assert.match(rerun.stdout, /kept .*schemas\.ts: edited since it was generated; its new version is .*schemas\.ts\.new/)
      assert.match(rerun.stdout, /wrote .*db\.ts/)
      assert.match(rerun.stdout, /served: authors, book_tags, book_titles, books, publishers, reviews, shelves, tags/)
      assert.match(await readFile(join(out, 'schemas.ts'), 'utf8'), /\/\/ mine/)
      assert.match(await readFile(join(out, 'schemas.ts.new'), 'utf8'), /export const Shelves = Type\.Object/)
      assert.match(await readFile(join(out, 'db.ts'), 'utf8'), /export interface ShelvesTable \{/)
      await sql.raw('drop table shelves').execute(db)
      await generate(url, out, '--force')
      assert.deepEqual(await filesOf(out), files)
      await assert.rejects(readFile(join(out, 'schemas.ts.new'), 'utf8'), 'a stale new version is removed')

      // registerAll passes the startup checks and serves CRUD and relations on every table.
      const { registerAll } = (await import(pathToFileURL(join(out, 'viewsets.ts')).href)) as {
        registerAll: (app: FastifyInstance, db: Kysely<any>, options?: { prefix?: string }) => Promise<void>
      }
      const app = testApp(t)
      await registerAll(app, db, { prefix: '/api' })
      await app.ready()

      const publisher = await crud(app, '/api/publishers', { name: 'Penguin', founded: 1935 }, { founded: 1936 })
      const author = await crud(
        app,
        '/api/authors',
        {
          name: 'Ursula',
          email: 'ursula@example.com',
          born: '1929-10-21',
          rating: 4.5,
          profile: dialect.name === 'sqlite' ? '{"tags":["sf"]}' : { tags: ['sf'] },
        },
        { status: 'retired', active: false }
      )
      assert.equal(author.active, true, 'the default is served as a boolean')
      assert.equal(author.status, 'active')
      assert.match(String(author.created_at), /^\d{4}-\d\d-\d\dT/)
      const book = await crud(
        app,
        '/api/books',
        {
          title: 'The Dispossessed',
          author_id: author.id,
          publisher_id: publisher.id,
          pages: 387,
          price: 9.5,
          isbn: 9780061054884,
        },
        { published_at: '1974-05-01T00:00:00.000Z' }
      )
      const tag = await crud(app, '/api/tags', { label: 'fiction' }, { label: 'science fiction' })
      // The link table is a resource of its own, by its composite key (issue 39).
      const linked = await app.inject({ method: 'POST', url: '/api/book_tags', payload: { book_id: book.id, tag_id: tag.id } })
      assert.equal(linked.statusCode, 201, linked.body)
      assert.equal(linked.headers.location, `/api/book_tags/${book.id},${tag.id}`)
      const link = await app.inject({ method: 'GET', url: `/api/book_tags/${book.id},${tag.id}` })
      assert.deepEqual(link.json(), { book_id: book.id, tag_id: tag.id })
      const review = await crud(app, '/api/reviews', { book_id: book.id, body: 'Ambiguous.' }, { stars: 4 })
      assert.equal(review.stars, 5, 'the default comes back')

      // Relations: many-to-one load by default; one-to-many and many-to-many when ?fields= names them.
      const plain = await app.inject({ method: 'GET', url: `/api/books/${book.id}` })
      assert.equal(plain.json().author.name, 'Ursula')
      assert.equal(plain.json().tags, undefined, 'to-many relations are not loaded by default')
      assert.equal(plain.json().reviews, undefined)
      const loaded = await app.inject({ method: 'GET', url: `/api/books/${book.id}?fields=id,author,publisher,tags,reviews` })
      assert.equal(loaded.statusCode, 200, loaded.body)
      assert.equal(loaded.json().author.name, 'Ursula')
      assert.equal(loaded.json().publisher.name, 'Penguin')
      assert.deepEqual(
        loaded.json().tags.map((entry: { label: string }) => entry.label),
        ['science fiction']
      )
      assert.deepEqual(
        loaded.json().reviews.map((entry: { stars: number }) => entry.stars),
        [4]
      )
      const authors = await app.inject({ method: 'GET', url: `/api/authors/${author.id}?fields=id,books` })
      assert.deepEqual(
        authors.json().books.map((entry: { title: string }) => entry.title),
        ['The Dispossessed']
      )
      const tags = await app.inject({ method: 'GET', url: `/api/tags/${tag.id}?fields=id,books` })
      assert.deepEqual(
        tags.json().books.map((entry: { id: number }) => entry.id),
        [book.id]
      )
      const search = await app.inject({
        method: 'GET',
        url: '/api/books?search=dispo&order_by=-title&author_id=' + String(author.id),
      })
      assert.equal(search.statusCode, 200, search.body)
      assert.equal(search.json().length, 1)

      // The view: LIST and GET through --key, nothing else.
      const titles = await app.inject({ method: 'GET', url: `/api/book_titles/${book.id}` })
      assert.equal(titles.statusCode, 200, titles.body)
      assert.deepEqual(titles.json(), { id: book.id, title: 'The Dispossessed' })
      assert.notEqual(
        (await app.inject({ method: 'POST', url: '/api/book_titles', payload: { title: 'x' } })).statusCode,
        201
      )

      // DELETE last: the link table, with no viewset of its own, follows by cascade.
      for (const [path, id] of [
        ['reviews', review.id],
        ['books', book.id],
        ['tags', tag.id],
        ['authors', author.id],
        ['publishers', publisher.id],
      ] as const) {
        const deleted = await app.inject({ method: 'DELETE', url: `/api/${path}/${id}` })
        assert.equal(deleted.statusCode, 204, `${path}: ${deleted.body}`)
      }
      assert.deepEqual((await app.inject({ method: 'GET', url: '/api/book_tags' })).json(), [], 'the links followed by cascade')
    })
  })
}

test('the generated code type-checks under strict, on every dialect at once', async () => {
  assert.ok(generated.size > 0)
  const config = join(output, 'tsconfig.json')
  await writeFile(
    config,
    JSON.stringify({
      extends: '../../tsconfig.json',
      include: [...generated.keys()].map((name) => `./${name}/*.ts`),
      exclude: [],
    })
  )
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = await run(process.execPath, [tsc, '-p', config, '--noEmit'], { cwd: root }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) })
  )
  assert.equal(result.stdout.trim(), '', result.stdout)
})

test('examples/generated is what the command writes for the relations example, and it serves that database', async (t) => {
  await mkdir(output, { recursive: true })
  const url = `sqlite:${join(output, 'relations.db')}`
  const db = createDatabase<any>(url)
  t.after(() => db.destroy())
  await migrate(db)
  const out = join(output, 'example')
  await command(url, out, '--tables', 'authors,book_tags,books,publishers,tags')
  // The header's command differs (another URL); the hashed bodies must not.
  // server.ts keeps the URL it was generated from: the example's is sqlite:base.db.
  const body = (text: string) => text.slice(text.indexOf('\n\n')).replace(`'${url}'`, "'sqlite:base.db'")
  for (const name of ['db.ts', 'schemas.ts', 'viewsets.ts', 'server.ts']) {
    assert.equal(
      body(await readFile(join(out, name), 'utf8')),
      body(await readFile(join(root, 'examples', 'generated', 'db', name), 'utf8')),
      `examples/generated/db/${name} is stale: rerun the command in its header`
    )
  }
  const app = await buildGenerated({ db })
  t.after(() => app.close())
  const book = await app.inject({ method: 'GET', url: '/books/1?fields=id,author,tags' })
  assert.equal(book.statusCode, 200, book.body)
  assert.equal(book.json().author.name, 'Ursula K. Le Guin')
  assert.deepEqual(
    book.json().tags.map((tag: { name: string }) => tag.name),
    ['fiction', 'science fiction', 'classic']
  )
})

test('the command names what is wrong: no database, no password in the header', async () => {
  await assert.rejects(
    command('sqlite:does-not-exist.db', join(output, 'none')),
    (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 1)
      assert.match(
        error.stderr ?? '',
        /there is no SQLite database at does-not-exist\.db: pass --url, or set DATABASE_URL/
      )
      return true
    }
  )
  assert.equal(
    withoutPassword('postgres://app:s3cret@db.example:5432/shop?sslmode=require'),
    'postgres://app@db.example:5432/shop?sslmode=require'
  )
  assert.equal(withoutPassword('mysql://root@127.0.0.1:3306/shop'), 'mysql://root@127.0.0.1:3306/shop')
  assert.equal(withoutPassword('sqlite:app.db'), 'sqlite:app.db')
})
