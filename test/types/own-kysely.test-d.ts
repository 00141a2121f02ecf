// Type tests of withPreparedStatements: `npm run test:types` compiles this file; each @ts-expect-error must be an
// error.
import Database from 'better-sqlite3'
import { Type } from '@sinclair/typebox'
import { Kysely, SqliteDialect } from 'kysely'
import type { Generated } from 'kysely'
import { createViewset, withPreparedStatements } from 'fastify-viewsets'

interface DB {
  items: { id: Generated<number>; name: string }
}
const database = new Database(':memory:')

// the wrapper keeps the instance's tables: a viewset over it checks its table as over the instance itself
const db: Kysely<DB> = withPreparedStatements(new Kysely<DB>({ dialect: new SqliteDialect({ database }) }), database)
const Item = Type.Object({ id: Type.Optional(Type.Integer()), name: Type.String() })
createViewset({ db, table: 'items', schema: Item })

// @ts-expect-error a table the instance does not have
createViewset({ db, table: 'books', schema: Item })

// @ts-expect-error the handle is an object: the driver's database or pool, not a URL
withPreparedStatements(db, 'sqlite:app.db')
