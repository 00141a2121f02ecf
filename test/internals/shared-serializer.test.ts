import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sharedSerializer } from '../../lib/schema/serializer.js'

// Route serializers are shared by what they write, whatever the `$id`s of the schemas they reach: fifty viewsets with
// the same columns compile their whole row once at startup (issue 43). The `$id`s are renamed by structure, so that
// a value equal to an id (a `const`, which fast-json-stringify writes as it is) never makes two schemas one.

const row = (id: string, kind: string) => ({
  $id: id,
  type: 'object',
  properties: { id: { type: 'integer' }, name: { type: 'string' }, kind: { const: kind } },
})

test('two viewsets whose rows differ by their $id only share one compiled serializer', () => {
  const items = sharedSerializer({ $ref: 'Items#' }, { Items: row('Items', 'thing') }, 'now')
  const books = sharedSerializer({ $ref: 'Books#' }, { Books: row('Books', 'thing') }, 'now')
  assert.equal(books, items)
  assert.equal(books({ id: 1, name: 'a', kind: 'thing' }), '{"id":1,"name":"a","kind":"thing"}')
  // A reference into a row (`Items#/properties/name`) is renamed the same way.
  const name = sharedSerializer({ $ref: 'Items#/properties/name' }, { Items: row('Items', 'thing') }, 'now')
  assert.equal(sharedSerializer({ $ref: 'Books#/properties/name' }, { Books: row('Books', 'thing') }, 'now'), name)
  assert.equal(name('b'), '"b"')
})

test('a const equal to its row\'s $id keeps its own serializer: the ids are renamed by structure, not in the text', () => {
  const alpha = sharedSerializer({ $ref: 'Alpha#' }, { Alpha: row('Alpha', 'Alpha') }, 'now')
  const beta = sharedSerializer({ $ref: 'Beta#' }, { Beta: row('Beta', 'Beta') }, 'now')
  assert.notEqual(beta, alpha)
  assert.equal(alpha({ id: 1, name: 'a', kind: 'Alpha' }), '{"id":1,"name":"a","kind":"Alpha"}')
  assert.equal(beta({ id: 2, name: 'b', kind: 'Beta' }), '{"id":2,"name":"b","kind":"Beta"}')
  // A `$ref` inside a data keyword (an example) is data: left as written, and part of what tells schemas apart.
  const example = (id: string) => ({ ...row(id, 'x'), examples: [{ $ref: `${id}#` }] })
  const first = sharedSerializer({ $ref: 'One#' }, { One: example('One') }, 'now')
  assert.notEqual(sharedSerializer({ $ref: 'Two#' }, { Two: example('Two') }, 'now'), first)
})

test('the asks of one viewset\'s routes for the same answer get the same serializer, without compiling it', () => {
  const externals = { Items: row('Items', 'thing'), Problem: { $id: 'Problem', type: 'object', properties: {} } }
  const first = sharedSerializer({ $ref: 'Problem#', description: 'Not found' }, externals)
  assert.equal(sharedSerializer({ $ref: 'Problem#', description: 'Conflict' }, externals), first)
  assert.equal(first({ title: 'x' }), '{}')
})
