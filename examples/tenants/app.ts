import type { FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import { createViewset, fieldAccessByRole, Viewset, viewsetDocs, ViewsetErrors } from 'fastify-viewsets'
import type { ListRequest, ScopeFunction, ViewsetMethod, ViewsetToken } from 'fastify-viewsets'
import { passwordGrant } from '../auth/token.js'
import { demoUsers } from '../auth/users.js'
import { exampleApp } from '../shared.js'
import type { BuildOptions as SharedOptions } from '../shared.js'
import { migrate } from './migrations.js'

// Two organisations share one database: every row carries its `org`, and a token's `org` claim says whose rows a
// request may read and write. One rule per table (a per-method `scope` object, so that a method without an entry
// fails at startup) follows the rows into every relation of every other viewset, relation filters and counts;
// `beforeWrite` stamps the organisation; the overridden `list` and the custom route use the scoped helpers. A field
// rule on tasks (`fieldAccess`) keeps a task's internal `note` from the `viewer` role, and its `priority` unchanged.

export const Tag = Type.Object({ id: Type.Integer(), name: Type.String() })
export const ProjectRow = Type.Object({ id: Type.Integer(), name: Type.String() })
export const TaskRow = Type.Object({
  id: Type.Integer(), title: Type.String(), note: Type.String(), tags: Type.Optional(Type.Array(Tag)),
})

/** A task with its project (to-one) and its tags (many-to-many). */
export const Task = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  title: Type.String({ minLength: 1, maxLength: 255 }),
  org: Type.Optional(Type.String({ readOnly: true })),
  /** Internal: hidden from the `viewer` role (the field rule). */
  note: Type.Optional(Type.String({ maxLength: 255 })),
  /** Read-only for the `viewer` role (the field rule). */
  priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 9 })),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  project: Type.Optional(Type.Union([ProjectRow, Type.Null()])),
  tags: Type.Optional(Type.Array(Tag)),
})
export type Task = Static<typeof Task>

/** A project with its tasks (to-many), each with its tags (two levels deep). */
export const Project = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  org: Type.Optional(Type.String({ readOnly: true })),
  tasks: Type.Optional(Type.Array(TaskRow)),
})

export const TagRow = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 64 }),
  org: Type.Optional(Type.String({ readOnly: true })),
})

export interface DB {
  projects: { id: Generated<number>; name: string; org: string }
  tasks: {
    id: Generated<number>
    title: string
    org: string
    note: Generated<string>
    priority: Generated<number>
    project_id: number | null
  }
  tags: { id: Generated<number>; name: string; org: string }
  task_tags: { task_id: number; tag_id: number }
}

type Tenanted = 'projects' | 'tasks' | 'tags'

/** The one-row methods and BULK, every one protected (the bulk writes and AGGREGATE are opt-in, and left out here). */
const methods: ViewsetMethod[] = ['LIST', 'GET', 'POST', 'BULK', 'PUT', 'PATCH', 'DELETE']

/** The organisation of a token; a token without one reaches no row (`''` is no organisation's). */
function orgOf (token: ViewsetToken | null): string {
  return typeof token?.org === 'string' ? token.org : ''
}

/** The one rule of every table, for every method: a row is its organisation's. */
function everyMethod<T extends Tenanted> (rule: ScopeFunction<DB, T>) {
  return { LIST: rule, GET: rule, PUT: rule, PATCH: rule, DELETE: rule }
}
const projectsOfOrg: ScopeFunction<DB, 'projects'> = (eb, { token }) => eb('org', '=', orgOf(token))
const tasksOfOrg: ScopeFunction<DB, 'tasks'> = (eb, { token }) => eb('org', '=', orgOf(token))
const tagsOfOrg: ScopeFunction<DB, 'tags'> = (eb, { token }) => eb('org', '=', orgOf(token))

/** What every write stores as the organisation: the token's, whatever the body says (`org` is read-only). */
const stampOrg = <V extends object>(values: V, { token }: { token: ViewsetToken | null }) =>
  ({ ...values, org: orgOf(token) })

/**
 * The field rule of tasks, by the token's `role` claim (none: `member`): a `viewer` never reads a task's `note` (in
 * /tasks, and in the tasks of /projects) nor names it (`?fields=`, `/projects?tasks.note__contains=`), and the
 * `priority` of its body is ignored.
 */
const taskFields = fieldAccessByRole(
  { member: {}, viewer: { hidden: ['note'], readOnly: ['priority'] } },
  (token) => (typeof token?.role === 'string' ? token.role : 'member')
)

const through = { table: 'task_tags', sourceKey: 'task_id', targetKey: 'tag_id' } as const

/**
 * Tasks: the generated routes, an overridden `list` (`?project=` narrows it, newest first) and a custom route,
 * `GET /tasks/summary`. `this.query()` applies the request's `'LIST'` rule, so neither sees another organisation.
 */
class TaskViewset extends Viewset<DB, 'tasks', typeof Task> {
  static override listQuery = Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
    project: Type.Optional(Type.Integer()),
  })

  override async list (request: ListRequest<{ limit: number; offset: number; project?: number }>) {
    const { limit, offset, project } = request.query
    let query = this.query().orderBy('id', 'desc').limit(limit).offset(offset)
    if (project !== undefined) query = query.where('project_id', '=', project)
    return await query.execute()
  }

  override customRoutes (fastify: FastifyInstance) {
    fastify.get('/summary', {
      config: { protected: true },
      schema: {
        operationId: 'summarizeTasks',
        tags: ['tasks'],
        summary: 'Count the caller\'s tasks and the projects they are in',
        description: 'Counts only the rows of the caller\'s organisation: `this.query()` applies the LIST rule.',
        response: { 200: Type.Object({ tasks: Type.Integer(), projects: Type.Integer() }) },
      },
    }, async () => {
      const rows = await this.query().execute()
      return { tasks: rows.length, projects: new Set(rows.map((row) => row.project_id)).size }
    })
  }
}

/** Options of {@link build}: the shared ones, and the secret tokens are signed with. */
export interface BuildOptions extends SharedOptions<DB> {
  /** HS256 secret of the tokens (default `env.JWT_SECRET`; required, 32 characters or more). */
  secret?: string
  /** Where JWT_SECRET and DEMO_PASSWORD are read (default `process.env`). */
  env?: Record<string, string | undefined>
}

/** Lifetime of a token from POST /token, in seconds. */
const tokenLifetime = 3600

/**
 * With DEMO_PASSWORD set, `POST /token` (examples/auth's password grant) signs a token for the user `demo`, a
 * member of the organisation `acme`, so that Swagger UI's Authorize button and tools that read the document's
 * OAuth2 flow can call every route; without it there is no token endpoint and tokens are signed by hand.
 */
async function demoLogin (app: FastifyInstance, password: string | undefined): Promise<void> {
  if (password === undefined || password === '') return
  if (password.length < 15) throw new ViewsetErrors.InvalidOption('DEMO_PASSWORD', 'set it to 15 characters or more')
  await app.register(passwordGrant, {
    users: await demoUsers('demo', password),
    expiresIn: tokenLifetime,
    claims: () => ({ org: 'acme', role: 'member' }),
  })
}

/** Builds the example app without listening, so tests can inject requests into it. */
export async function build (options: BuildOptions = {}): Promise<FastifyInstance> {
  const env = options.env ?? process.env
  const secret = options.secret ?? env.JWT_SECRET ?? ''
  if (secret.length < 32) throw new ViewsetErrors.InvalidOption('secret', 'set JWT_SECRET to 32 characters or more')
  const { app, db } = await exampleApp(options, migrate)
  // Before the viewsets: their rules read the token, so something must verify it when they are registered.
  await app.register(fastifyJwt, { secret, sign: { expiresIn: tokenLifetime } })
  const login = env.DEMO_PASSWORD
  await app.register(viewsetDocs, {
    title: 'Tenants API',
    version: '1.0.0',
    ...(login === undefined || login === '' ? {} : { tokenUrl: '/token' }),
  })
  await demoLogin(app, login)
  const common = { db, methods, protectedMethods: methods, beforeWrite: stampOrg }
  await app.register(createViewset({
    ...common,
    table: 'projects',
    schema: Project,
    scope: everyMethod(projectsOfOrg),
    // `?tasks.note__contains=`: through the tasks' field rule, an unknown name for a viewer.
    filterFields: { name: ['eq', 'contains'], 'tasks.note': ['contains'] },
    relatedConfig: {
      prefetchRelated: {
        tasks: {
          table: 'tasks',
          foreignKey: 'project_id',
          orderBy: 'id',
          relatedConfig: { prefetchRelated: { tags: { table: 'tags', through, orderBy: 'name' } } },
        },
      },
    },
  }), { prefix: '/projects' })
  await app.register(new TaskViewset({
    ...common,
    table: 'tasks',
    schema: Task,
    scope: everyMethod(tasksOfOrg),
    fieldAccess: taskFields,
    relatedConfig: {
      selectRelated: { project: { table: 'projects', foreignKey: 'project_id' } },
      prefetchRelated: { tags: { table: 'tags', through, orderBy: 'name' } },
    },
  }).register(), { prefix: '/tasks' })
  await app.register(createViewset({ ...common, table: 'tags', schema: TagRow, scope: everyMethod(tagsOfOrg) }), { prefix: '/tags' })
  return app
}
