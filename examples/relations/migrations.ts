import { PostgresAdapter } from 'kysely'
import type { ColumnDefinitionBuilder, Kysely, Migration } from 'kysely'
import { migrate as runMigrations } from '../shared.js'

/** An auto-incrementing integer key in each dialect's spelling. */
function key (db: Kysely<any>): ['serial' | 'integer', (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? ['serial', (column) => column.primaryKey()]
    : ['integer', (column) => column.primaryKey().autoIncrement()]
}

const publishers = ['Penguin', 'Faber & Faber', 'Gallimard']
const authors = [
  { name: 'Ursula K. Le Guin', country: 'US' },
  { name: 'Italo Calvino', country: 'IT' },
  { name: 'Wisława Szymborska', country: 'PL' },
  { name: 'Jorge Luis Borges', country: 'AR' },
  { name: 'A. Nonymous', country: null }, // no books yet: `books` is []
]
const tags = ['fiction', 'science fiction', 'poetry', 'short stories', 'essays', 'classic']
// [title, year, author (1-based, null for none), publisher (1-based, null for none), tags (1-based)]
const books: Array<[string, number, number | null, number | null, number[]]> = [
  ['The Left Hand of Darkness', 1969, 1, 1, [1, 2, 6]],
  ['The Dispossessed', 1974, 1, 1, [1, 2]],
  ['A Wizard of Earthsea', 1968, 1, 1, [1]],
  ['Invisible Cities', 1972, 2, 3, [1, 6]],
  ["If on a winter's night a traveler", 1979, 2, 3, [1]],
  ['Cosmicomics', 1965, 2, 3, [1, 2, 4]],
  ['View with a Grain of Sand', 1995, 3, 2, [3]],
  ['Map: Collected and Last Poems', 2015, 3, null, [3]],
  ['Ficciones', 1944, 4, 1, [1, 4, 6]],
  ['Labyrinths', 1962, 4, 1, [1, 4, 5]],
  ['Other Inquisitions', 1952, 4, null, [5]],
  ['Beowulf', 1000, null, 2, [3, 6]], // no known author: `author` is null
]

/** The example's schema and seed data, as Kysely migrations kept in code. */
const migrations: Record<string, Migration> = {
  '2026-11-21-library': {
    async up (db: Kysely<any>) {
      const [idType, id] = key(db)
      await db.schema
        .createTable('publishers')
        .addColumn('id', idType, id)
        .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
        .execute()
      await db.schema
        .createTable('authors')
        .addColumn('id', idType, id)
        .addColumn('name', 'varchar(255)', (column) => column.notNull())
        .addColumn('country', 'varchar(2)')
        .execute()
      await db.schema
        .createTable('tags')
        .addColumn('id', idType, id)
        .addColumn('name', 'varchar(64)', (column) => column.notNull().unique())
        .execute()
      await db.schema
        .createTable('books')
        .addColumn('id', idType, id)
        .addColumn('title', 'varchar(255)', (column) => column.notNull())
        .addColumn('year', 'integer')
        .addColumn('author_id', 'integer', (column) => column.references('authors.id').onDelete('set null'))
        .addColumn('publisher_id', 'integer', (column) => column.references('publishers.id').onDelete('set null'))
        .execute()
      await db.schema.createIndex('books_author_id').on('books').column('author_id').execute()
      await db.schema.createIndex('books_publisher_id').on('books').column('publisher_id').execute()
      await db.schema
        .createTable('book_tags')
        .addColumn('book_id', 'integer', (column) => column.notNull().references('books.id').onDelete('cascade'))
        .addColumn('tag_id', 'integer', (column) => column.notNull().references('tags.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('book_tags_pk', ['book_id', 'tag_id'])
        .execute()
      // The primary key serves book → tags; this index serves tag → books.
      await db.schema.createIndex('book_tags_tag_id').on('book_tags').columns(['tag_id', 'book_id']).execute()
    },
    async down (db: Kysely<any>) {
      for (const table of ['book_tags', 'books', 'tags', 'authors', 'publishers']) {
        await db.schema.dropTable(table).ifExists().execute()
      }
    },
  },
  '2026-11-21-library-seed': {
    async up (db: Kysely<any>) {
      // Rows are inserted in order on a fresh schema, so their keys are 1, 2, 3, ...
      await db
        .insertInto('publishers')
        .values(publishers.map((name) => ({ name })))
        .execute()
      await db.insertInto('authors').values(authors).execute()
      await db
        .insertInto('tags')
        .values(tags.map((name) => ({ name })))
        .execute()
      await db
        .insertInto('books')
        .values(
          books.map(([title, year, author, publisher]) => ({
            title,
            year,
            author_id: author,
            publisher_id: publisher,
          }))
        )
        .execute()
      await db
        .insertInto('book_tags')
        .values(books.flatMap(([, , , , tagIds], index) => tagIds.map((tag) => ({ book_id: index + 1, tag_id: tag }))))
        .execute()
    },
    async down (db: Kysely<any>) {
      for (const table of ['book_tags', 'books', 'tags', 'authors', 'publishers']) await db.deleteFrom(table).execute()
    },
  },
}

/** Brings the database up to date. Its own migration table lets it share a database (such as ./base.db) with the other
 * examples. */
export async function migrate (db: Kysely<any>): Promise<void> {
  await runMigrations(db, migrations, { tableName: 'relations_migration' })
}
