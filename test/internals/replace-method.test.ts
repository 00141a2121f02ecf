import assert from 'node:assert/strict'
import { test } from 'node:test'
import { replaceMethod } from '../../lib/dialect/shared/replace-method.js'

// The one way the library wraps a driver's method (pg's client.query and pool.connect, mysql2's query): the
// wrapper receives the method as it was, bound to its object, and becomes the object's own property.

class Driver {
  calls: unknown[][] = []
  query (...args: unknown[]): string {
    this.calls.push(args)
    return `answered ${args.length}`
  }
}

test('replaceMethod hands the wrapper the original method, bound to its object, and installs what it returns', () => {
  const driver = new Driver()
  const seen: unknown[] = []
  replaceMethod(driver, 'query', (query) => (text, values, callback) => {
    seen.push(text)
    return query(text, values, callback)
  })
  assert.ok(Object.hasOwn(driver, 'query'), 'the replacement is the object\'s own property')
  assert.equal(driver.query('select 1', [2]), 'answered 3')
  assert.deepEqual(seen, ['select 1'])
  assert.deepEqual(driver.calls, [['select 1', [2], undefined]])
  assert.equal(new Driver().query('x'), 'answered 1', 'other objects of the class keep their method')
})

test('replaceMethod refuses an object without that method, changing nothing', () => {
  const driver = { query: 'not a function' }
  assert.throws(() => { replaceMethod(driver, 'query', (query) => query) }, TypeError)
  assert.equal(driver.query, 'not a function')
})
