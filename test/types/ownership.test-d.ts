// Type tests of issue 14 (ownership): `npm run test:types` compiles this file. Every expected-error line
// below must be an error; every other line must compile.
import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { ExpressionBuilder, Generated, Kysely, Transaction, Updateable } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { createDatabase, createViewset, Viewset } from 'fastify-viewsets'
import type { AfterWriteMethod, RowChange, RowContext, ScopedMethod, ViewsetToken, WriteMethod } from 'fastify-viewsets'

interface DB {
  items: { id: Generated<number>, name: string, owner: string | null }
  users: { id: Generated<number>, email: string }
}
const db: Kysely<DB> = createDatabase<DB>('sqlite::memory:')
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })

// ---- scope: `eb` knows the table's columns, and only those ------------------------------------------
createViewset({
  db,
  table: 'items',
  schema: Item,
  scope: (eb, context) => {
    expectTypeOf(context.method).toEqualTypeOf<ScopedMethod>()
    expectTypeOf(context.token).toEqualTypeOf<ViewsetToken | null>()
    return eb('owner', '=', context.token?.sub ?? null)
  },
})
createViewset({ db, table: 'items', schema: Item, scope: () => undefined })
// @ts-expect-error `email` is a column of users, not of items
createViewset({ db, table: 'items', schema: Item, scope: (eb) => eb('email', '=', 'a') })
// @ts-expect-error `nope` is no column at all
createViewset({ db, table: 'items', schema: Item, scope: (eb) => eb.ref('nope') })
// @ts-expect-error a scope returns a condition, not a value
createViewset({ db, table: 'items', schema: Item, scope: (eb) => eb.ref('name') })
// @ts-expect-error `owner` holds strings
createViewset({ db, table: 'items', schema: Item, scope: (eb) => eb('owner', '=', 3) })

// ---- scope per method (issue 35): an entry per method, a function or null --------------------------------
createViewset({
  db,
  table: 'items',
  schema: Item,
  scope: { LIST: null, GET: null, PUT: (eb, { token }) => eb('owner', '=', token?.sub ?? null), PATCH: null, DELETE: null },
})
// @ts-expect-error POST is no method a row rule applies to
createViewset({ db, table: 'items', schema: Item, scope: { POST: null } })
// @ts-expect-error an entry's `eb` knows the table's columns only
createViewset({ db, table: 'items', schema: Item, scope: { LIST: (eb) => eb('email', '=', 'a') } })

// ---- beforeWrite: Updateable values of the table in and out, columns outside the schema included ------
createViewset({
  db,
  table: 'items',
  schema: Item,
  beforeWrite: async (values, { method, token }) => {
    expectTypeOf(values).toEqualTypeOf<Updateable<DB['items']>>()
    expectTypeOf(method).toEqualTypeOf<WriteMethod>()
    return { ...values, owner: token?.sub ?? null }
  },
})
// @ts-expect-error `owner` holds strings
createViewset({ db, table: 'items', schema: Item, beforeWrite: (values) => ({ ...values, owner: 3 }) })

// ---- beforeWrite's third argument: the write's transaction, typed with the app's DB (issue 38 item 8) ----------
createViewset({
  db,
  table: 'items',
  schema: Item,
  beforeWrite: async (values, { token }, trx) => {
    expectTypeOf(trx).toEqualTypeOf<Transaction<DB>>()
    const mine = await trx.selectFrom('items').select('id').where('owner', '=', token?.sub ?? null).execute()
    return { ...values, owner: mine.length < 100 ? token?.sub ?? null : null }
  },
})
// @ts-expect-error the transaction knows the app's tables only
createViewset({ db, table: 'items', schema: Item, beforeWrite: async (values, _c, trx) => { await trx.selectFrom('nope').execute(); return values } })

// ---- the overridable methods ----------------------------------------------------------------------
class Items extends Viewset<DB, 'items', typeof Item> {
  override scope (eb: ExpressionBuilder<DB, 'items'>, { token, method }: RowContext<ScopedMethod>) {
    return method === 'LIST' ? undefined : eb('owner', '=', token?.sub ?? null)
  }

  override beforeWrite (values: Updateable<DB['items']>, { token }: RowContext<WriteMethod>) {
    return { ...values, owner: token?.sub ?? null }
  }
}
void Items

class Counted extends Viewset<DB, 'items', typeof Item> {
  override async beforeWrite (values: Updateable<DB['items']>, _context: RowContext<WriteMethod>, trx: Transaction<DB>) {
    await trx.selectFrom('users').select('id').execute()
    return values
  }
}
void Counted

class Wrong extends Viewset<DB, 'items', typeof Item> {
  // @ts-expect-error a column of another table
  override scope (eb: ExpressionBuilder<DB, 'items'>) { return eb('email', '=', 'a') }
}
void Wrong

// ---- afterWrite (issue 38): the viewset method, the rows as the schema types them, the write's typed transaction --
createViewset({
  db,
  table: 'items',
  schema: Item,
  afterWrite: async ({ method }, { before, after }, trx) => {
    expectTypeOf(method).toEqualTypeOf<AfterWriteMethod>()
    expectTypeOf(after).toEqualTypeOf<Static<typeof Item> | null>()
    expectTypeOf(before?.name).toEqualTypeOf<string | undefined>()
    await trx.insertInto('users').values({ email: `${method}:${after?.id ?? before?.id ?? 0}` }).execute()
  },
})
// @ts-expect-error the transaction knows the tables of DB only
createViewset({ db, table: 'items', schema: Item, afterWrite: async (_c, _r, trx) => { await trx.selectFrom('nope').execute() } })

class Audited extends Viewset<DB, 'items', typeof Item> {
  override async afterWrite (context: RowContext<AfterWriteMethod>, change: RowChange<Static<typeof Item>>,
    trx: Transaction<DB>) {
    await trx.insertInto('users').values({ email: `${context.method}:${change.after?.name ?? ''}` }).execute()
  }
}
void Audited
