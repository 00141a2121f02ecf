import { performance } from 'node:perf_hooks'

// The child process of the startup measurement (startup.ts forks it with plain `node`): an app with one
// viewset per table of a SQLite file, timed from the process's start (performance's time origin) to
// `app.ready()`. The modules are imported inside the timing, as a user's server loads them. With a third argument
// `docs`, viewsetDocs is registered first and the first `GET /docs/json` after `ready()` is timed too (issue 42, 5).

async function main (): Promise<void> {
  const [file, tables, mode] = process.argv.slice(2) as [string, string, string | undefined]
  const started = performance.now()
  const [{ default: Fastify }, { Type }, { createDatabase, createViewset, viewsetDocs }] = await Promise.all([
    import('fastify'), import('@sinclair/typebox'), import('fastify-viewsets'),
  ])
  const imported = performance.now()
  const db = createDatabase<Record<string, { id: number, name: string, email: string, age: number, active: number, joined: string }>>(`sqlite:${file}`)
  const app = Fastify({ logger: false })
  if (mode === 'docs') void app.register(viewsetDocs)
  for (let index = 1; index <= Number(tables); index++) {
    const schema = Type.Object({
      id: Type.Optional(Type.Integer({ readOnly: true })),
      name: Type.String({ maxLength: 100 }),
      email: Type.String({ maxLength: 200 }),
      age: Type.Integer({ minimum: 0 }),
      active: Type.Integer({ minimum: 0, maximum: 1 }),
      joined: Type.String({ maxLength: 30 }),
    })
    // Registered as apps usually do, without awaiting each one: avvio loads them in order at ready().
    void app.register(createViewset({
      db,
      table: `table_${index}`,
      schema,
      filterFields: { name: ['eq', 'contains'], age: ['gte', 'lte'], active: ['eq'] },
      orderingFields: ['name', 'age', 'joined'],
      searchFields: ['name', 'email'],
    }), { prefix: `/table-${index}` })
  }
  await app.ready()
  const ready = performance.now()
  let docsMs: number | undefined
  if (mode === 'docs') {
    const document = await app.inject('/docs/json')
    docsMs = performance.now() - ready
    const paths = Object.keys(document.json<{ paths: object }>().paths).length
    if (document.statusCode !== 200 || paths !== 2 * Number(tables)) throw new Error(`/docs/json: ${document.statusCode}, ${paths} paths`)
  }
  process.send?.({ totalMs: ready, importMs: imported - started, readyMs: ready - imported, docsMs })
  await app.close()
  await db.destroy()
}

await main()
