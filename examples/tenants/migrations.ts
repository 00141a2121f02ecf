import { PostgresAdapter } from 'kysely'
import type { ColumnDefinitionBuilder, Kysely, Migration } from 'kysely'
import { migrate as runMigrations } from '../shared.js'

/** An auto-incrementing integer key in each dialect's spelling. */
function key (db: Kysely<any>): ['serial' | 'integer', (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  return db.getExecutor().adapter instanceof PostgresAdapter
    ? ['serial', (column) => column.primaryKey()]
    : ['integer', (column) => column.primaryKey().autoIncrement()]
}

/** The new row's key: by RETURNING where the database has it, by MySQL's insertId elsewhere. */
async function insertedId (db: Kysely<any>, table: string, values: Record<string, unknown>): Promise<number> {
  const insert = db.insertInto(table).values(values)
  if (db.getExecutor().adapter.supportsReturning) return Number((await insert.returning('id').executeTakeFirstOrThrow()).id)
  return Number((await insert.executeTakeFirstOrThrow()).insertId)
}

// Two organisations, each with its projects, tasks and tags: [org, project, tasks ([title, tags])].
const seed: Array<[string, string, Array<[string, string[]]>]> = [
  ['acme', 'Rocket skates', [['Order wheels', ['urgent']], ['Test on a cliff', ['urgent', 'outdoor']]]],
  ['acme', 'Giant magnet', [['Find a magnet', []]]],
  ['globex', 'Doomsday device', [['Hire henchmen', ['hiring']], ['Build a volcano lair', ['outdoor']]]],
]

// The internal notes of some tasks, by title: what the `viewer` role may not read.
const notes: Array<[string, string]> = [
  ['Order wheels', 'Supplier owes us a refund'],
  ['Hire henchmen', 'Budget not approved yet'],
]

/** The example's schema and seed data, as Kysely migrations kept in code. */
const migrations: Record<string, Migration> = {
  '2026-11-26-tenants': {
    async up (db: Kysely<any>) {
      const [idType, id] = key(db)
      for (const table of ['projects', 'tags']) {
        await db.schema.createTable(table)
          .addColumn('id', idType, id)
          .addColumn('name', 'varchar(255)', (column) => column.notNull())
          // The organisation the row belongs to: the `org` claim of the token that created it.
          .addColumn('org', 'varchar(64)', (column) => column.notNull())
          .execute()
      }
      await db.schema.createTable('tasks')
        .addColumn('id', idType, id)
        .addColumn('title', 'varchar(255)', (column) => column.notNull())
        .addColumn('org', 'varchar(64)', (column) => column.notNull())
        .addColumn('project_id', 'integer', (column) => column.references('projects.id'))
        .execute()
      await db.schema.createTable('task_tags')
        .addColumn('task_id', 'integer', (column) => column.notNull().references('tasks.id').onDelete('cascade'))
        .addColumn('tag_id', 'integer', (column) => column.notNull().references('tags.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('task_tags_pk', ['task_id', 'tag_id'])
        .execute()
      const tags = new Map<string, number>()
      for (const [org, project, tasks] of seed) {
        const projectId = await insertedId(db, 'projects', { name: project, org })
        for (const [title, names] of tasks) {
          const taskId = await insertedId(db, 'tasks', { title, org, project_id: projectId })
          for (const name of names) {
            const tagKey = `${org}/${name}`
            let tagId = tags.get(tagKey)
            if (tagId === undefined) {
              tagId = await insertedId(db, 'tags', { name, org })
              tags.set(tagKey, tagId)
            }
            await db.insertInto('task_tags').values({ task_id: taskId, tag_id: tagId }).execute()
          }
        }
      }
    },
    async down (db: Kysely<any>) {
      for (const table of ['task_tags', 'tasks', 'tags', 'projects']) await db.schema.dropTable(table).execute()
    },
  },
  // A field rule's columns: an internal note a viewer may not read, and a priority a viewer may not change.
  '2026-11-26-tenants-notes': {
    async up (db: Kysely<any>) {
      await db.schema.alterTable('tasks').addColumn('note', 'varchar(255)', (column) => column.notNull().defaultTo(''))
        .execute()
      await db.schema.alterTable('tasks').addColumn('priority', 'integer', (column) => column.notNull().defaultTo(0))
        .execute()
      for (const [title, note] of notes) await db.updateTable('tasks').set({ note, priority: 1 }).where('title', '=', title).execute()
    },
    async down (db: Kysely<any>) {
      for (const column of ['note', 'priority']) await db.schema.alterTable('tasks').dropColumn(column).execute()
    },
  },
}

/** Brings the database up to date (its own migration table, so that it can share a database with other examples). */
export async function migrate (db: Kysely<any>): Promise<void> {
  await runMigrations(db, migrations, { tableName: 'tenants_migration' })
}
