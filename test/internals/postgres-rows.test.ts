import assert from 'node:assert/strict'
import { test } from 'node:test'
import { objectRows } from '../../lib/dialect/postgres/postgres-rows.js'

// The pool shortcut's rows, asked of pg as arrays (lib/dialect/postgres/postgres-rows.ts): each becomes the object pg
// would have made, a column list that changes under one SQL text gets a builder of its own, and a client that ignored
// rowMode (answering objects) is answered as it is.
test('objectRows makes the objects pg would: names quoted, __proto__ a plain column, the last of one name winning', () => {
  const fields = [{ name: '__proto__' }, { name: 'a"b\\c' }, { name: 'id' }, { name: 'id' }]
  const [row, other] = objectRows('select odd', fields, [['x', 1, 2, 3], ['y', 4, 5, 6]])
  assert.ok(row !== undefined && other !== undefined)
  assert.equal(Object.getPrototypeOf(row), Object.prototype)
  assert.deepEqual(Object.keys(row), ['__proto__', 'a"b\\c', 'id'])
  assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, 'x')
  assert.equal(row['a"b\\c'], 1)
  assert.equal(row.id, 3)
  assert.equal(other.id, 6)
  // The same text with other columns (a table altered between two runs): read by the new names.
  assert.deepEqual(objectRows('select odd', [{ name: 'name' }], [['Dune']]), [{ name: 'Dune' }])
  assert.deepEqual(objectRows('select odd', [{ name: 'name' }], []), [])
  assert.deepEqual(objectRows('select plain', undefined, [{ id: 1 }]), [{ id: 1 }])
  assert.deepEqual(objectRows('select plain', [{ name: 'id' }], [{ id: 2 }]), [{ id: 2 }])
})
