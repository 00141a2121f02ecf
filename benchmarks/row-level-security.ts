import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import Fastify from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import { sql } from 'kysely'
import type { LogEvent } from 'kysely'
import { createDatabase, createViewset } from 'fastify-viewsets'

// The cost of `rowLevelSecurity` per request (README, "Row-level security on PostgreSQL"): the same viewset of tasks
// with its project (a to-one relation), served with the option and without it, over one PostgreSQL table whose
// policies admit the caller's rows. Counts statements per request from Kysely's log, and, run under callgrind,
// the server's instructions per request (the database's own work is not counted):
//
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//   valgrind --tool=callgrind --callgrind-out-file=benchmarks/.data/rls-%p.out node --single-threaded \
//     --conditions=source --import tsx benchmarks/row-level-security.ts --mode rls --path '/tasks/1'
//
// With --mode plain the viewset has no option (its statements bypass the policies: the connecting user owns the
// table). The counters are zeroed after the warm-up and dumped after the measured requests.

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'rls' },
    path: { type: 'string', default: '/tasks/1' },
    requests: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '1000' },
    callgrind: { type: 'boolean', default: false },
  },
})
const url = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const tag = randomBytes(4).toString('hex')
const schema = `rls_bench_${tag}`
const roles = { user: `rls_bench_${tag}_user`, anon: `rls_bench_${tag}_anon` }

const admin = createDatabase<any>(url)
await sql`create schema ${sql.id(schema)}`.execute(admin)
const scoped = new URL(url)
scoped.searchParams.set('options', `-c search_path=${schema}`)
let statements = 0
const log = (event: LogEvent) => {
  if (event.level === 'query') statements++
}
const db = createDatabase<any>(scoped.toString(), { log })
const sub = sql`current_setting('request.jwt.claims', true)::jsonb ->> 'sub'`
await sql`create table projects (id serial primary key, name text not null, owner text not null)`.execute(db)
await sql`create table tasks (id serial primary key, title text not null, owner text not null,
  project_id integer references projects (id))`.execute(db)
await sql`insert into projects (name, owner) select 'p' || i, case when i % 2 = 0 then 'bob' else 'alice' end
  from generate_series(1, 100) i`.execute(db)
await sql`insert into tasks (title, owner, project_id) select 't' || i, case when i % 2 = 0 then 'bob' else 'alice' end,
  1 + (i % 100) from generate_series(1, 1000) i`.execute(db)
for (const role of [roles.user, roles.anon]) {
  await sql`create role ${sql.id(role)} nologin`.execute(db)
  await sql`grant usage on schema ${sql.id(schema)} to ${sql.id(role)}`.execute(db)
  await sql`grant select on all tables in schema ${sql.id(schema)} to ${sql.id(role)}`.execute(db)
}
for (const table of ['projects', 'tasks']) {
  await sql`alter table ${sql.id(table)} enable row level security`.execute(db)
  await sql`create policy owned on ${sql.id(table)} using (owner = ${sub})`.execute(db)
}

const Project = Type.Object({ id: Type.Integer(), name: Type.String(), owner: Type.String() })
const Task = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  owner: Type.String(),
  project_id: Type.Union([Type.Integer(), Type.Null()]),
  project: Type.Optional(Type.Union([Project, Type.Null()])),
})
const app = Fastify({ logger: false })
await app.register(fastifyJwt, { secret: randomBytes(32).toString('hex') })
const rowLevelSecurity = values.mode === 'rls' ? { rowLevelSecurity: { roles: [roles.user], defaultRole: roles.anon } } : {}
await app.register(createViewset({
  db,
  table: 'tasks',
  schema: Task,
  methods: ['LIST', 'GET'],
  relatedConfig: { selectRelated: { project: { table: 'projects', foreignKey: 'project_id' } } },
  ...rowLevelSecurity,
}), { prefix: '/tasks' })
await app.ready()
const headers = { authorization: `Bearer ${app.jwt.sign({ sub: 'alice', role: roles.user })}` }

async function serve (count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await app.inject({ url: values.path, headers })
    if (response.statusCode !== 200) throw new Error(`${values.path}: ${response.statusCode} ${response.body}`)
  }
}

try {
  await serve(Number(values.warmup))
  if (values.callgrind) execFileSync('callgrind_control', ['-z', String(process.pid)], { stdio: 'ignore' })
  statements = 0
  const requests = Number(values.requests)
  await serve(requests)
  if (values.callgrind) execFileSync('callgrind_control', ['-d', 'measured', String(process.pid)], { stdio: 'ignore' })
  console.log(`${values.mode} ${values.path}: ${statements / requests} statements per request`)
} finally {
  await app.close()
  await db.destroy()
  await sql`drop schema ${sql.id(schema)} cascade`.execute(admin)
  for (const role of Object.values(roles)) await sql`drop role ${sql.id(role)}`.execute(admin)
  await admin.destroy()
}
