import assert from 'node:assert/strict'
import { test } from 'node:test'
import { expressionBuilder, sql } from 'kysely'
import type { OperationNode, SqlBool } from 'kysely'
import { columnsRead } from '../../lib/query/rule-columns.js'

// The columns a rule reads decide whether a write may skip its WITH CHECK read (data/write-check.ts `untouched`):
// every column at any depth, and "unknown" for anything no column name states.

interface Items { items: { id: number, owner: string, rank: number }, members: { org: string, user: string } }
const eb = expressionBuilder<Items, 'items'>()
let shapes = 0
const read = (expression: { toOperationNode: () => OperationNode }) =>
  columnsRead(`test#${++shapes};`, expression.toOperationNode())

test('the columns of a rule, its subqueries included', () => {
  assert.deepEqual(read(eb('owner', '=', 'alice')), new Set(['owner']))
  assert.deepEqual(read(eb.or([eb('owner', '=', 'a'), eb('rank', '>', 1)])), new Set(['owner', 'rank']))
  const subquery = eb.exists(eb.selectFrom('members').select('members.org').whereRef('members.org', '=', 'items.owner')
    .where('members.user', '=', 'alice'))
  assert.deepEqual(read(subquery), new Set(['org', 'owner', 'user']))
})

test('raw SQL and `*` read columns no name states: unknown', () => {
  assert.equal(read(sql<SqlBool>`${sql.ref('owner')} = ${'a'}`), undefined)
  assert.equal(read(eb.exists(eb.selectFrom('members').selectAll())), undefined)
})

test('learnt once per shape', () => {
  const node = eb('owner', '=', 'a').toOperationNode()
  assert.deepEqual(columnsRead('same#1;', node), new Set(['owner']))
  assert.deepEqual(columnsRead('same#1;', eb('rank', '=', 1).toOperationNode()), new Set(['owner']), 'the shape decides')
})
