import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { TObject } from '@sinclair/typebox'
import type { Generated, Kysely } from 'kysely'
import { createViewset, viewsetMethods } from '../../lib/index.js'
import type { RelatedConfig, ViewsetOptions } from '../../lib/index.js'
import { autoIncrement, testDatabase } from './database.js'
import type { TestDatabase, TestDialect } from './database.js'
import { testApp } from './app.js'

// Two tenants, alice and bob, over three tables and a join table, each row its owner's (issue 35): a to-one
// (tasks → project), a to-many (projects → tasks) and a many-to-many (tasks ↔ tags), two levels deep.
// tasks.project_id is a real foreign key. Every test gets its own database (schema on PostgreSQL).

export const secret = 'test-secret-that-is-long-enough-for-hs256'

export interface TenantsDB {
  projects: { id: Generated<number>; name: string; owner: string }
  tasks: { id: Generated<number>; title: string; secret: string; owner: string; project_id: number | null }
  tags: { id: Generated<number>; name: string; owner: string }
  task_tags: { task_id: number; tag_id: number }
}

export const Tag = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
export const ProjectRow = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
export const TaskRow = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  secret: Type.String(),
  owner: Type.String(),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  tags: Type.Optional(Type.Array(Tag)),
})
export const Task = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String(),
  secret: Type.Optional(Type.String()),
  owner: Type.Optional(Type.String({ readOnly: true })),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  project: Type.Optional(Type.Union([ProjectRow, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
export const Project = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String(),
  owner: Type.Optional(Type.String({ readOnly: true })),
  tasks: Type.Optional(Type.Array(TaskRow)),
})

const through = { table: 'task_tags', sourceKey: 'task_id', targetKey: 'tag_id' } as const
export const taskRelations = {
  selectRelated: { project: { table: 'projects', foreignKey: 'project_id' } },
  prefetchRelated: { tags: { table: 'tags', through, orderBy: 'id' } },
} satisfies RelatedConfig<TenantsDB>
export const projectRelations = {
  prefetchRelated: {
    tasks: {
      table: 'tasks',
      foreignKey: 'project_id',
      orderBy: 'id',
      relatedConfig: { prefetchRelated: taskRelations.prefetchRelated },
    },
  },
} satisfies RelatedConfig<TenantsDB>

/** The one rule of every table: a row is its owner's. One function, so that two viewsets of a table share it. */
export const ownerRule = (eb: any, { token }: { token: { sub?: string } | null }) => eb('owner', '=', token?.sub ?? '')

/** Every method a viewset serves without an option of its own: all but HISTORY, which needs `history`. */
export const plainMethods = viewsetMethods

/** Every viewset of the tenants' app: each row is its owner's, read and written. */
export function owned (table: keyof TenantsDB & string, schema: TObject): Record<string, unknown> {
  return {
    table,
    schema,
    methods: plainMethods,
    protectedMethods: plainMethods,
    beforeWrite: (values: Record<string, unknown>, { token }: { token: { sub?: string } | null }) =>
      ({ ...values, owner: token?.sub ?? '' }),
    scope: ownerRule,
  }
}

export interface TenantsApp extends TestDatabase {
  app: FastifyInstance
  alice: { authorization: string }
  bob: { authorization: string }
}

/**
 * Creates and fills the four tables. alice owns projects 1 (a-proj) and 3 (z-proj), tasks 1, 2 and 5, tag 1; bob
 * project 2 (b-proj), tasks 3 and 4, tag 2. Task 2 (alice's) is planted in bob's project, task 4 (bob's) in
 * alice's; every task carries both tags.
 */
export async function seedTenants (database: TestDatabase, dialect: TestDialect): Promise<void> {
  const { db } = database
  const [idType, id] = autoIncrement(dialect.name)
  for (const table of ['projects', 'tags'] as const) {
    await db.schema.createTable(table).addColumn('id', idType as 'integer', id)
      .addColumn('name', 'varchar(64)', (column) => column.notNull())
      .addColumn('owner', 'varchar(64)', (column) => column.notNull()).execute()
  }
  await db.schema.createTable('tasks').addColumn('id', idType as 'integer', id)
    .addColumn('title', 'varchar(64)', (column) => column.notNull())
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo(''))
    .addColumn('owner', 'varchar(64)', (column) => column.notNull())
    .addColumn('project_id', 'integer', (column) => column.references('projects.id')).execute()
  await db.schema.createTable('task_tags').addColumn('task_id', 'integer', (column) => column.notNull())
    .addColumn('tag_id', 'integer', (column) => column.notNull()).execute()
  await db.insertInto('projects').values([
    { name: 'a-proj', owner: 'alice' }, { name: 'b-proj', owner: 'bob' }, { name: 'z-proj', owner: 'alice' },
  ]).execute()
  await db.insertInto('tags').values([{ name: 'a-tag', owner: 'alice' }, { name: 'b-tag', owner: 'bob' }]).execute()
  await db.insertInto('tasks').values([
    { title: 'a-task-1', secret: 'alice-secret-1', owner: 'alice', project_id: 1 },
    { title: 'a-task-2', secret: 'alice-secret-2', owner: 'alice', project_id: 2 },
    { title: 'b-task-3', secret: 'bob-secret-3', owner: 'bob', project_id: 2 },
    { title: 'b-task-4', secret: 'bob-secret-4', owner: 'bob', project_id: 1 },
    { title: 'a-task-5', secret: 'alice-secret-5', owner: 'alice', project_id: 3 },
  ]).execute()
  await db.insertInto('task_tags').values([1, 2, 3, 4, 5].flatMap((task) => [
    { task_id: task, tag_id: 1 }, { task_id: task, tag_id: 2 },
  ])).execute()
}

export interface TenantsOptions {
  /** Options merged over the tasks viewset's (and the projects' ones). */
  tasks?: Record<string, unknown>
  projects?: Record<string, unknown>
  /** Changes to the tables once seeded, before any viewset is registered (an index, say). */
  prepare?: (db: Kysely<TenantsDB>) => Promise<void>
  /** More viewsets, registered before `ready()`. */
  extra?: (app: FastifyInstance, db: Kysely<TenantsDB>) => Promise<void>
}

/** The tenants' app: /projects, /tasks and /tags, each scoped to its owner, with signed tokens for alice and bob. */
export async function tenantsApp (
  t: TestContext,
  dialect: TestDialect,
  options: TenantsOptions = {}
): Promise<TenantsApp> {
  const database = await testDatabase(t, dialect)
  await seedTenants(database, dialect)
  const db = database.db as unknown as Kysely<TenantsDB>
  await options.prepare?.(db)
  const app = testApp(t)
  await app.register(fastifyJwt, { secret })
  const create = (given: object) => createViewset({ db, ...given } as ViewsetOptions<TenantsDB, 'tasks', typeof Task>)
  await app.register(create({ ...owned('projects', Project), relatedConfig: projectRelations, ...options.projects }),
    { prefix: '/projects' })
  await app.register(create({ ...owned('tasks', Task), relatedConfig: taskRelations, ...options.tasks }),
    { prefix: '/tasks' })
  await app.register(create(owned('tags', Tag)), { prefix: '/tags' })
  await options.extra?.(app, db)
  await app.ready()
  const bearer = (sub: string) => ({ authorization: `Bearer ${app.jwt.sign({ sub })}` })
  return { ...database, app, alice: bearer('alice'), bob: bearer('bob') }
}
