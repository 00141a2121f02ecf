import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { expressionBuilder, sql } from 'kysely'
import type { Expression, OperationNode, SqlBool } from 'kysely'
import { scopeCondition } from '../../lib/query/scope.js'
import { compiledOnce, ScopePatterns } from '../../lib/query/scope-shape.js'
import { expressionOf } from '../../lib/query/condition.js'
import { dialects, testDatabase } from '../helpers/database.js'

// A scope's shape and parameters are learnt once per spelling of its tree (query/scope-shape.ts): whatever the rule
// builds, they must be exactly what compiling it every time gives, values in the compiler's order, on every dialect.

interface Items { items: { id: number, owner: string, rank: number } }
const eb = expressionBuilder<Items, 'items'>()

/** Rules of one shape each, called with two sets of values: the second call is served from what the first learnt. */
const rules: Record<string, (a: string, b: number) => Expression<SqlBool>> = {
  'one term': (a) => eb('owner', '=', a),
  'and, or': (a, b) => eb.or([eb.and([eb('owner', '=', a), eb('rank', '>=', b)]), eb('id', '=', b + 100)]),
  'in list': (a, b) => eb('owner', 'in', [a, `${a}-2`, 'carol']).and('rank', '<', b),
  'raw, values reversed': (a, b) => sql<SqlBool>`${sql.ref('rank')} <= ${b} and ${sql.ref('owner')} = ${a}`,
  subquery: (a, b) => eb('id', 'in', eb.selectFrom('items as other').select('other.id').where('other.owner', '=', a))
    .and('rank', '>', b),
  'immediate value': (a) => eb('owner', '=', a).and('rank', '>', sql.lit(1)),
  'is null': (a, b) => eb.or([eb('owner', 'is', null), eb('owner', '=', a), eb('rank', '=', b)]),
}

for (const dialect of dialects) {
  describe(`scope shapes learnt once (${dialect.name})`, () => {
    for (const [name, rule] of Object.entries(rules)) {
      test(name, async (t) => {
        const { db } = await testDatabase(t, dialect)
        await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('owner', 'varchar(40)').addColumn('rank', 'integer').execute()
        await db.insertInto('items').values([
          { id: 1, owner: 'alice', rank: 1 }, { id: 2, owner: 'alice', rank: 5 }, { id: 3, owner: 'bob', rank: 2 },
          { id: 4, owner: null, rank: 9 }, { id: 104, owner: 'bob', rank: 0 },
        ]).execute()
        const shapes = new Set<string>()
        const texts = new Set<string>()
        for (const [a, b] of [['alice', 2], ['bob', 4], ['alice', 4]] as const) {
          const learnt = scopeCondition(db, 'items', rule(a, b))
          const direct = db.selectFrom('items').where(learnt.where).compile() // the tree this call built, compiled now
          shapes.add(learnt.shape)
          texts.add(direct.sql)
          // A short learnt key, not the SQL: it is hashed into the statement caches' keys on every request.
          assert.match(learnt.shape, /^scope#\d+;$/)
          assert.deepEqual(learnt.parameters, direct.parameters)
          const rows = await db.selectFrom('items').select('id').where(learnt.where).orderBy('id').execute()
          const expected = await db.selectFrom('items').select('id').where(rule(a, b)).orderBy('id').execute()
          assert.deepEqual(rows, expected)
        }
        // One shape for the three calls, as they compile to one SQL text.
        assert.equal(texts.size, 1)
        assert.equal(shapes.size, 1)
      })
    }
    test('a spelling seen before is not compiled again; another one is', async (t) => {
      const { db } = await testDatabase(t, dialect)
      let compiled = 0
      const compile = (node: OperationNode) => {
        compiled++
        return db.selectFrom('items').where(scopeCondition(db, 'items', { expressionType: undefined, toOperationNode: () => node }).where).compile()
      }
      const first = compiledOnce(db, 'items counted', eb('owner', '=', 'alice').toOperationNode(), compile)
      const second = compiledOnce(db, 'items counted', eb('owner', '=', 'bob').toOperationNode(), compile)
      const other = compiledOnce(db, 'items counted', eb('owner', '<>', 'bob').toOperationNode(), compile)
      assert.equal(compiled, 2)
      assert.equal(second.shape, first.shape)
      assert.deepEqual([first.parameters, second.parameters, other.parameters], [['alice'], ['bob'], ['bob']])
      assert.notEqual(other.shape, first.shape)
    })
    test('a tree matched against a kept pattern shares its shape only when it spells the same', async (t) => {
      const { db } = await testDatabase(t, dialect)
      let compiled = 0
      const compile = (node: OperationNode) => {
        compiled++
        return db.selectFrom('items').where(expressionOf(node)).compile()
      }
      const patterns = new ScopePatterns()
      const learnt = (expression: Expression<SqlBool>, context = 'items patterns') =>
        compiledOnce(db, context, expression.toOperationNode(), compile, patterns)
      const first = learnt(eb('owner', 'in', ['a', 'b']).and('rank', '>', sql.lit(1)))
      const same = learnt(eb('owner', 'in', ['c', 'd']).and('rank', '>', sql.lit(1))) // matched: not compiled
      const others = [
        learnt(eb('owner', 'in', ['c', 'd', 'e']).and('rank', '>', sql.lit(1))), // a longer list
        learnt(eb('id', 'in', [1, 2]).and('rank', '>', sql.lit(1))), // another column
        learnt(eb('owner', 'in', ['c', 'd']).and('rank', '>', sql.lit(2))), // another immediate value
        learnt(eb('owner', 'in', ['c', 'd']).and('rank', '>', 2)), // a bound value where one was immediate
        learnt(eb('owner', 'in', ['c', 'd']).and('rank', '>', sql.lit(1)), 'items elsewhere'), // another context
      ]
      assert.equal(same.shape, first.shape)
      assert.deepEqual(same.parameters, ['c', 'd'])
      assert.equal(new Set([first.shape, ...others.map((other) => other.shape)]).size, 6)
      assert.deepEqual(others.map((other) => other.parameters),
        [['c', 'd', 'e'], [1, 2], ['c', 'd'], ['c', 'd', 2], ['c', 'd']])
      assert.equal(compiled, 6)
      // Each is matched from now on, with its own values, and none is compiled again.
      assert.deepEqual(learnt(eb('owner', 'in', ['x', 'y']).and('rank', '>', 7)), { shape: others[3]?.shape, parameters: ['x', 'y', 7] })
      assert.equal(compiled, 6)
    })
  })
}
