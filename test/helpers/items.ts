import { Type } from '@sinclair/typebox'
import type { Static } from '@sinclair/typebox'
import type { Generated } from 'kysely'
import type { TestDatabase } from './database.js'
import { autoIncrement } from './database.js'

/** The items fixture: a secret column that the schema does not serve, a unique name, a nullable description. */
export const Item = Type.Object({
  id: Type.Optional(Type.Integer({ readOnly: true })),
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
  price: Type.Optional(Type.Number({ minimum: 0 })),
  in_stock: Type.Optional(Type.Boolean()),
})
export type Item = Static<typeof Item>

export interface ItemsTable {
  id: Generated<number>
  name: string
  description: string | null
  price: Generated<number>
  in_stock: Generated<boolean>
  secret: Generated<string>
}
export interface ItemsDB { items: ItemsTable }

export async function createItemsTable ({ db, dialect }: TestDatabase): Promise<void> {
  const [idType, id] = autoIncrement(dialect)
  await db.schema.createTable('items')
    .addColumn('id', idType as 'integer', id)
    .addColumn('name', 'varchar(255)', (column) => column.notNull().unique())
    .addColumn('description', 'varchar(1024)')
    .addColumn('price', 'real', (column) => column.notNull().defaultTo(0))
    .addColumn('in_stock', 'boolean', (column) => column.notNull().defaultTo(true))
    .addColumn('secret', 'varchar(64)', (column) => column.notNull().defaultTo('s3cr3t'))
    .execute()
}
