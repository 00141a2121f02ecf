// Issue 37 item 8 (for items 1-2): the new read shapes under the cost classification. A group with `or` or `not`,
// `nin` and the anchored LIKE operators are heavy; an `and` of index-served terms stays cheap.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compileOnlySqlite } from '../helpers/database.js'
import { costOf } from '../../lib/execution/cost-class.js'
import { FilterGroups } from '../../lib/query/filter-groups.js'
import type { GroupFilter } from '../../lib/query/filter-groups.js'
import type { AnyExpressionBuilder } from '../../lib/query/condition.js'
import type { Row } from '../../lib/sql.js'

const db = compileOnlySqlite<Record<string, Row>>()

/** An `=` filter on `column`, as planFilters plans one. */
const equal = (column: string): GroupFilter => ({
  parameter: column,
  list: false,
  schema: { type: 'integer' },
  condition: (value) => ({ shape: column, parameters: [value], expression: (eb) => eb(eb.ref(column), '=', value) }),
})

test('a group with or or not is heavy; and() of comparisons is cheap; nin is heavy', () => {
  const groups = new FilterGroups(new Map([['a', equal('a')], ['b', equal('b')]]))
  const cost = (query: Record<string, unknown>) => {
    const conditions = groups.conditions(query, 'items', undefined)
    let select = db.selectFrom('items').selectAll().orderBy('id').limit(10)
    for (const condition of conditions) select = select.where((eb: AnyExpressionBuilder) => condition.expression(eb))
    return costOf(select.compile().query)
  }
  assert.equal(cost({ and: '(a.1,b.2)' }), 'cheap')
  assert.equal(cost({ or: '(a.1,b.2)' }), 'heavy')
  assert.equal(cost({ and: '(a.1,not.b.2)' }), 'heavy')
  assert.equal(cost({ 'not.and': '(a.1)' }), 'heavy')
  assert.equal(cost({ and: '(a.1,or(b.2,b.3))' }), 'heavy')
  assert.equal(costOf(db.selectFrom('items').selectAll().where('a', 'not in', [1, 2]).compile().query), 'heavy')
})
