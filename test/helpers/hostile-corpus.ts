/**
 * The hostile-input corpus: injection payloads and malformed values put into every query parameter,
 * path id and body field of a viewset, plus malformed JSON, wrong content types, oversized bodies and a
 * fast-check generated part. Each request says what it sent, so that an error body echoing the
 * client's own input is not taken for a leak.
 */
import fc from 'fast-check'

export interface HostileRequest {
  /** A short description, for failure messages. */
  label: string
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS'
  /** Path and query, already encoded. */
  url: string
  /** The raw body sent, if any. */
  body?: string | Buffer
  /** Content-Type of the body (default application/json when there is a body). */
  contentType?: string | null
  /** The status this request must get, when the corpus knows it. */
  expect?: number | ((dialect: string) => number | undefined)
  /** The JSON object sent, when there was one: its strings must come back as sent on success. */
  sent?: Record<string, unknown>
  /** Request headers besides Content-Type (Prefer, If-Match). */
  headers?: Record<string, string>
}

/** SQL metacharacters, injection payloads and odd values, as one list. */
export const injections: readonly string[] = [
  "' OR '1'='1",
  "' OR 1=1 --",
  "'; DROP TABLE products; --",
  '"; DROP TABLE products; --',
  '1; DELETE FROM products',
  '1 UNION SELECT secret, secret FROM products',
  "' UNION SELECT name, secret FROM makers --",
  '1) OR (1=1',
  "') OR ('1'='1",
  "' || (select secret from products limit 1) || '",
  "'; update products set secret = 'x'; --",
  "1' AND sleep(5) AND '1'='1",
  "'; select pg_sleep(5); --",
  'randomblob(1000000000)',
  "load_extension('x')",
  "ATTACH DATABASE '/tmp/x.db' AS x",
  '`id`',
  '[id]',
  '"id"',
  'id--',
  'id/*',
  '*/',
  '-- ',
  '#',
  ';',
  "'",
  '"',
  "''",
  '\\',
  "\\'",
  '\\\\',
  '%',
  '_',
  '%%',
  '%_%',
  '!',
  '!%',
  '[a-z]%',
  '*',
  '?',
  '$1',
  ':name',
  '@@version',
  // eslint-disable-next-line no-template-curly-in-string -- a template-injection probe, sent as text
  '${7*7}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '\u0000',
  'a\u0000b',
  '\u202Eevil',
  '\uFEFF',
  'e\u0301',
  'İı',
  'ß',
  'Ω≈ç√∫',
  '😀',
  '\uD800',
  '\u0007\b\f\n\r\t\v',
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e309',
  '-1',
  '1.5',
  '0x10',
  '9007199254740993',
  '99999999999999999999999',
  'null',
  'true',
  'false',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'x'.repeat(3000),
]

/** The LIST query parameters of the hostile fixture (search, ordering, fields, pagination, count and every filter). */
export const listParameters: readonly string[] = [
  'search',
  'order_by',
  'fields',
  'limit',
  'offset',
  'count',
  'name',
  'name__eq',
  'name__contains',
  'name__in',
  'price__gte',
  'price__lte',
  'price__in',
  'in_stock',
  'maker_id',
  'maker_id__in',
  'maker_id__isnull',
]

/** The body fields: the schema's, its relations, and a column the schema does not serve. */
export const bodyFields: readonly string[] = [
  'name',
  'description',
  'price',
  'in_stock',
  'maker_id',
  'id',
  'maker',
  'reviews',
  'secret',
]

const json = (value: unknown) => JSON.stringify(value)
const query = (pairs: ReadonlyArray<readonly [string, string]>) =>
  new URLSearchParams(pairs.map(([key, value]): [string, string] => [key, value])).toString()

/**
 * Spreads `values` over `targets`: target i gets every value whose index is congruent to i modulo
 * `stride`, so that each target meets about 1/stride of the values and each value several targets.
 */
export function spread<T, V> (targets: readonly T[], values: readonly V[], stride: number): Array<[T, V]> {
  const pairs: Array<[T, V]> = []
  targets.forEach((target, t) =>
    values.forEach((value, v) => {
      if ((t + v) % stride === 0) pairs.push([target, value])
    })
  )
  return pairs
}

/** Path segments for an id that is not a plain integer (encoded; a lone surrogate cannot be). */
function idSegment (value: string): string {
  try {
    return encodeURIComponent(value)
  } catch {
    return '%ED%A0%80'
  }
}

function queryValue (key: string, value: string): string {
  try {
    return query([[key, value]])
  } catch {
    return `${key}=%ED%A0%80`
  }
}

let serial = 0
/** A name no other request of the corpus uses, so that a valid write is not a 409 by accident. */
export const uniqueName = (prefix = 'hostile') => `${prefix} ${++serial}`

/** The deterministic part: every parameter, id and body field meets the payloads, plus the known hard cases. */
export function fixedCorpus (ids: { product: number; bare: number }, bodyLimit: number): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (request: HostileRequest) => requests.push(request)
  const nul = (dialect: string) => (dialect === 'postgres' ? 400 : undefined)

  // Injections in every LIST query parameter.
  for (const [parameter, payload] of spread(listParameters, injections, 3)) {
    add({
      label: `LIST ?${parameter}=${json(payload).slice(0, 40)}`,
      method: 'GET',
      url: `/products?${queryValue(parameter, payload)}`,
    })
  }
  // In the path id of every element route.
  for (const payload of injections) {
    add({ label: `GET /products/${json(payload).slice(0, 40)}`, method: 'GET', url: `/products/${idSegment(payload)}` })
    add({
      label: `DELETE /products/${json(payload).slice(0, 40)}`,
      method: 'DELETE',
      url: `/products/${idSegment(payload)}`,
    })
  }
  for (const [method, payload] of spread(['PUT', 'PATCH'] as const, injections, 2)) {
    const sent = { name: uniqueName() }
    add({
      label: `${method} /products/${json(payload).slice(0, 40)}`,
      method,
      url: `/products/${idSegment(payload)}`,
      body: json(sent),
      sent,
    })
  }
  // In every body field, for POST, PUT and PATCH.
  for (const [field, payload] of spread(bodyFields, injections, 3)) {
    const sent = { name: uniqueName(), [field]: payload }
    add({
      label: `POST ${field}=${json(payload).slice(0, 40)}`,
      method: 'POST',
      url: '/products',
      body: json(sent),
      sent,
    })
  }
  for (const [field, payload] of spread(bodyFields, injections, 6)) {
    const sent = { [field]: payload }
    add({
      label: `PATCH ${field}=${json(payload).slice(0, 40)}`,
      method: 'PATCH',
      url: `/products/${ids.product}`,
      body: json(sent),
      sent,
    })
  }
  for (const [field, payload] of spread(bodyFields, injections, 9)) {
    const sent = { name: uniqueName(), [field]: payload }
    add({
      label: `PUT ${field}=${json(payload).slice(0, 40)}`,
      method: 'PUT',
      url: `/products/${ids.bare}`,
      body: json(sent),
      sent,
    })
  }

  // Wrong types, empty strings, huge numbers, NaN, negative and huge limit/offset.
  const bad: Array<[string, string, number | undefined]> = [
    ['limit', '-1', 400],
    ['limit', '0', 400],
    ['limit', '51', 400],
    ['limit', '1e309', 400],
    ['limit', 'NaN', 400],
    ['limit', '1.5', 400],
    ['limit', '', undefined],
    ['limit', 'abc', 400],
    ['limit', '9007199254740993', 400],
    ['limit', '100000000000000000000', 400],
    ['limit', '-9007199254740993', 400],
    ['offset', '-1', 400],
    ['offset', '1e20', 400],
    ['offset', '10000', 200],
    ['offset', '10001', 400],
    ['offset', '9007199254740991', 400],
    ['offset', '9007199254740992', 400],
    ['offset', 'Infinity', 400],
    ['offset', '', undefined],
    ['price__gte', '1e309', 400],
    ['price__gte', '-1e309', 400],
    ['price__gte', 'NaN', 400],
    ['price__gte', '1e308', undefined],
    // PostgreSQL compares with the `real` column's type, whose range ends near 3.4e38: 400 there.
    ['price__lte', '-1.7976931348623157e308', undefined],
    ['price__in', '1,2,NaN', 400],
    ['price__in', 'a,b', 400],
    ['price__in', Array.from({ length: 101 }, (_, i) => String(i)).join(','), 400],
    ['price__in', ',,,', 400],
    ['price__in', '', 400],
    ['maker_id', '2147483648', undefined],
    ['maker_id', '99999999999999999999', 400],
    ['maker_id', '-1', 200],
    ['maker_id', '1.5', 400],
    ['maker_id__in', '1,1,1,1', 200],
    ['maker_id__in', '1,x', 400],
    ['maker_id__isnull', 'maybe', 400],
    ['in_stock', 'maybe', 400],
    ['in_stock', 'TRUE', undefined],
    ['in_stock', '1', undefined],
    ['in_stock', '', undefined],
    ['fields', '', 400],
    ['fields', ',', 400],
    ['fields', 'id,,name', 400],
    ['fields', 'secret', 400],
    ['fields', 'id,secret', 400],
    ['fields', 'maker,reviews,name', 200],
    ['fields', Array.from({ length: 500 }, () => 'name').join(','), 200],
    ['order_by', 'secret', 400],
    ['order_by', '-secret', 400],
    ['order_by', 'maker', 400],
    ['order_by', 'reviews', 400],
    ['order_by', '--name', 400],
    ['order_by', '-', 400],
    ['order_by', ',', 400],
    ['order_by', 'name,-name', undefined],
    ['order_by', ' name', 400],
    ['order_by', 'name desc', 400],
    ['order_by', 'price;drop', 400],
    ['order_by', '', undefined],
    ['count', 'yes', 400],
    ['count', '2', 400],
    ['count', 'TRUE', undefined],
    ['search', 'x'.repeat(100), 200],
    ['search', 'x'.repeat(5000), 400],
    ['search', '\u0000', 400],
    ['search', 'a\u0000', 400],
    ['name__contains', '\u0000', 400],
    ['name', 'a\u0000b', undefined],
  ]
  for (const [parameter, value, status] of bad) {
    add({
      label: `LIST ?${parameter}=${json(value).slice(0, 40)}`,
      method: 'GET',
      url: `/products?${query([[parameter, value]])}`,
      ...(status === undefined ? {} : { expect: status }),
    })
  }
  // Encodings the query-string parser must survive.
  for (const raw of [
    'search=%',
    'search=%G1',
    'search=%FF',
    'search=%ED%A0%80',
    'search=%00',
    'search=a%2',
    '%=1',
    '=',
    '&&&',
    'search',
    'limit=1&&offset=',
    'a[b]=1',
    'search[]=x',
    'search[a]=x',
  ]) {
    add({ label: `LIST ?${raw}`, method: 'GET', url: `/products?${raw}` })
  }
  // Duplicate query keys: a parameter that takes one value gets an array, which is a 400.
  for (const [key, a, b] of [
    ['limit', '1', '2'],
    ['offset', '0', '1'],
    ['search', 'a', 'b'],
    ['order_by', 'name', 'price'],
    ['name', 'a', 'b'],
    ['fields', 'id', 'name'],
    ['count', 'true', 'false'],
    ['in_stock', 'true', 'false'],
    ['maker_id__in', '1', '2'],
    ['price__gte', '1', '2'],
  ] as const) {
    add({
      label: `LIST ?${key}=${a}&${key}=${b}`,
      method: 'GET',
      url: `/products?${query([
        [key, a],
        [key, b],
      ])}`,
      expect: 400,
    })
  }
  // Unicode in search, filters and names.
  for (const text of [
    'ü',
    'ÜBER',
    'ß',
    'İ',
    'ı',
    'Ω',
    'ﬀ',
    'e\u0301',
    '😀',
    '👨‍👩‍👧',
    '\u202Eevil',
    '\u200B',
    '中文',
    'عربى',
  ]) {
    add({ label: `LIST ?search=${text}`, method: 'GET', url: `/products?${query([['search', text]])}`, expect: 200 })
    add({
      label: `LIST ?name__contains=${text}`,
      method: 'GET',
      url: `/products?${query([['name__contains', text]])}`,
      expect: 200,
    })
    const sent = { name: `${uniqueName('unicode')} ${text}`, description: text.repeat(3) }
    add({
      label: `POST name with ${json(text)}`,
      method: 'POST',
      url: '/products',
      body: json(sent),
      sent,
      expect: 201,
    })
  }
  // NUL bytes in stored strings: PostgreSQL cannot store them (400); the others store them as sent.
  for (const field of ['name', 'description']) {
    const sent = { name: uniqueName('nul'), [field]: `nul\u0000byte ${field}` }
    add({ label: `POST ${field} with NUL`, method: 'POST', url: '/products', body: json(sent), sent, expect: nul })
    const patch = { [field]: `nul\u0000patch ${field}` }
    add({
      label: `PATCH ${field} with NUL`,
      method: 'PATCH',
      url: `/products/${ids.product}`,
      body: json(patch),
      sent: patch,
      expect: nul,
    })
  }

  // Wrong types and bounds in bodies.
  const bodies: Array<[Record<string, unknown>, number | ((dialect: string) => number | undefined) | undefined]> = [
    [{ name: '' }, 400],
    [{ name: 'x'.repeat(256) }, 400],
    [{ name: 123 }, 400],
    [{ name: null }, 400],
    [{ name: [] }, 400],
    [{ name: {} }, 400],
    [{ name: true }, 400],
    [{ price: -1 }, 400],
    [{ price: 'abc' }, 400],
    [{ price: '12' }, 400],
    [{ price: true }, 400],
    [{ price: null }, 400],
    [{ price: {} }, 400],
    [{ price: [] }, 400],
    [{ price: 1e308 }, (dialect) => (dialect === 'postgres' ? 400 : 201)],
    [{ price: 5e-324 }, undefined],
    [{ price: Number.MAX_SAFE_INTEGER }, undefined],
    [{ description: 'x'.repeat(1025) }, 400],
    [{ description: 'x'.repeat(1024) }, 201],
    [{ description: 42 }, 400],
    [{ maker_id: 999 }, 409],
    [{ maker_id: -1 }, 409],
    [{ maker_id: 2147483648 }, undefined],
    [{ maker_id: 1.5 }, 400],
    [{ maker_id: '1' }, 400],
    [{ maker_id: 2 ** 53 + 2 }, 400],
    [{ in_stock: 'true' }, 400],
    [{ in_stock: 1 }, 400],
    [{ in_stock: null }, 400],
    [{ id: 5 }, undefined],
    [{ id: 'abc' }, undefined],
    [{ maker: { id: 1, name: 'x' } }, undefined],
    [{ reviews: [{ id: 1, body: 'x' }] }, undefined],
    [{ secret: 'written?' }, 400],
    [{ unknown: 1 }, 400],
  ]
  for (const [fields, status] of bodies) {
    const sent = { name: uniqueName('typed'), ...fields }
    add({
      label: `POST ${json(fields).slice(0, 60)}`,
      method: 'POST',
      url: '/products',
      body: json(sent),
      sent,
      ...(status === undefined ? {} : { expect: status }),
    })
    const { name: _name, ...patch } = sent
    if (Object.keys(patch).length > 0) {
      add({
        label: `PATCH ${json(fields).slice(0, 60)}`,
        method: 'PATCH',
        url: `/products/${ids.product}`,
        body: json(fields),
        sent: fields,
      })
    }
  }

  // Malformed and hostile JSON.
  const raws: Array<[string, string | Buffer, number | undefined]> = [
    ['truncated', '{', 400],
    ['truncated value', '{"name":', 400],
    ['trailing comma', '{"name":"x",}', 400],
    ['single quotes', "{'name':'x'}", 400],
    ['bare word', 'nul', 400],
    ['empty', '', 400],
    ['space', ' ', 400],
    ['array', '[]', 400],
    ['string', '"str"', 400],
    ['number', '123', 400],
    ['null', 'null', 400],
    ['true', 'true', 400],
    ['NUL', '\u0000', 400],
    ['NaN', '{"name":"n","price":NaN}', 400],
    ['1e309', `{"name":"${uniqueName('inf')}","maker_id":1e309}`, 400],
    ['-1e309', `{"name":"${uniqueName('inf')}","price":-1e309}`, 400],
    ['price 1e309', `{"name":"${uniqueName('inf')}","price":1e309}`, 400],
    ['__proto__', `{"name":"${uniqueName('proto')}","__proto__":{"admin":true}}`, 400],
    ['constructor.prototype', `{"name":"${uniqueName('ctor')}","constructor":{"prototype":{"admin":true}}}`, 400],
    ['duplicate keys', `{"name":"${uniqueName('dup')}","name":"${uniqueName('dup')}"}`, 201],
    ['BOM', `\uFEFF{"name":"${uniqueName('bom')}"}`, undefined],
    [
      'invalid UTF-8',
      Buffer.concat([
        Buffer.from('{"name":"'),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from(`${uniqueName('utf8')}"}`),
      ]),
      undefined,
    ],
    ['deep arrays under the limit', `{"name":"deep","description":${'['.repeat(6000)}${']'.repeat(6000)}}`, 400],
    ['deep objects under the limit', `${'{"a":'.repeat(2500)}1${'}'.repeat(2500)}`, 400],
    ['deep arrays in an unknown field', `{"name":"deep2","extra":${'['.repeat(7000)}${']'.repeat(7000)}}`, 400],
    ['just under the limit', json({ name: 'long', description: 'x'.repeat(bodyLimit - 100) }), 400],
    ['over the limit', json({ name: 'big', description: 'x'.repeat(bodyLimit + 1) }), 413],
    ['one megabyte', json({ name: 'huge', description: 'x'.repeat(1 << 20) }), 413],
    ['deep arrays over the limit', `{"name":"d","description":${'['.repeat(bodyLimit)}${']'.repeat(bodyLimit)}}`, 413],
  ]
  for (const [label, body, status] of raws) {
    add({
      label: `POST ${label}`,
      method: 'POST',
      url: '/products',
      body,
      ...(status === undefined ? {} : { expect: status }),
    })
  }
  add({
    label: 'PATCH over the limit',
    method: 'PATCH',
    url: `/products/${ids.product}`,
    body: json({ description: 'x'.repeat(bodyLimit * 2) }),
    expect: 413,
  })
  add({
    label: 'PUT deep objects',
    method: 'PUT',
    url: `/products/${ids.product}`,
    body: `${'{"a":'.repeat(2500)}1${'}'.repeat(2500)}`,
    expect: 400,
  })

  // Wrong Content-Type.
  const body = () => json({ name: uniqueName('ctype') })
  // Bodies are JSON only: every other media type, text/plain included, is a 415.
  for (const [type, status] of [
    ['text/plain', 415],
    ['application/x-www-form-urlencoded', 415],
    ['multipart/form-data; boundary=x', 415],
    ['application/xml', 415],
    ['application/jsonx', 415],
    ['application/json; charset=utf-16', undefined],
    ['text/json', 415],
    ['', 415],
    [null, 415],
    ['APPLICATION/JSON', 201],
    ['application/json; charset=utf-8', 201],
  ] as const) {
    add({
      label: `POST Content-Type ${json(type)}`,
      method: 'POST',
      url: '/products',
      body: body(),
      contentType: type,
      ...(status === undefined ? {} : { expect: status }),
    })
    add({
      label: `PATCH Content-Type ${json(type)}`,
      method: 'PATCH',
      url: `/products/${ids.product}`,
      body: '{"price":1}',
      contentType: type,
      ...(status === undefined ? {} : { expect: status === 201 ? 200 : status }),
    })
  }

  // Paths and methods outside the routes.
  for (const [method, url, status] of [
    ['GET', '/products/', undefined],
    ['GET', '/products//1', 404],
    ['GET', '/products/1/extra', 404],
    ['GET', '/products/%ZZ', 400],
    ['GET', '/products/%00', 400],
    ['GET', `/products/${'9'.repeat(400)}`, 414],
    ['DELETE', '/products/%E0%A4%A', 400],
    ['GET', '/products/-1', 404],
    ['GET', '/products/0', 404],
    ['GET', '/products/1.0', undefined],
    ['GET', '/products/1e3', undefined],
    ['GET', '/products/+1', undefined],
    ['GET', '/products/%201', undefined],
    ['GET', '/products/0x1', undefined],
    ['GET', '/products/..%2f..%2fetc%2fpasswd', 400],
    // A wrong method on a known path is a 405 with Allow; OPTIONS answers 204 with Allow (issue 11).
    ['PUT', '/products', 405],
    // PATCH and DELETE of the collection are the bulk writes here (the fixture registers them): no filter, a 400.
    ['PATCH', '/products', 400],
    ['DELETE', '/products', 400],
    ['POST', `/products/${ids.product}`, 405],
    ['OPTIONS', '/products', 204],
    ['HEAD', '/products?limit=1', 200],
    ['HEAD', `/products/${ids.product}`, 200],
    ['GET', '/products/nothing/here', 404],
  ] as const) {
    add({ label: `${method} ${url.slice(0, 60)}`, method, url, ...(status === undefined ? {} : { expect: status }) })
  }
  return requests
}

// ---- the generated part --------------------------------------------------------------------------

const text = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(...injections),
  fc.integer().map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String)
)
const value = fc.oneof(text, fc.jsonValue({ maxDepth: 3 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null))

/** Requests drawn by fast-check: random query strings, ids and bodies against every route. */
export function generatedCorpus (ids: readonly number[], runs: number, seed: number): HostileRequest[] {
  const id = fc
    .oneof(
      { weight: 3, arbitrary: fc.constantFrom(...ids).map(String) },
      { weight: 1, arbitrary: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map(String) },
      { weight: 2, arbitrary: text }
    )
    .map(idSegment)
  const pairs = fc.array(
    fc.tuple(fc.oneof(fc.constantFrom(...listParameters, 'secret', 'maker', 'id'), fc.string({ maxLength: 8 })), text),
    { maxLength: 5 }
  )
  const list = pairs.map((entries): HostileRequest => {
    let url: string
    try {
      url = `/products?${query(entries)}`
    } catch {
      url = '/products?search=%ED%A0%80'
    }
    return { label: `LIST ${url.slice(0, 80)}`, method: 'GET', url }
  })
  const element = fc
    .tuple(fc.constantFrom('GET', 'DELETE', 'HEAD') as fc.Arbitrary<'GET' | 'DELETE' | 'HEAD'>, id)
    .map(([method, segment]): HostileRequest => ({
      label: `${method} /products/${segment.slice(0, 60)}`,
      method,
      url: `/products/${segment}`,
    }))
  // Bodies of any shape, and bodies that are nearly valid, so that some writes succeed and are checked.
  const plausible = fc.record(
    {
      name: fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), fc.constantFrom(...injections)),
      description: fc.oneof(text, fc.constant(null)),
      price: fc.oneof(fc.double({ min: 0, max: 1e6, noNaN: true }), value),
      in_stock: fc.oneof(fc.boolean(), value),
      maker_id: fc.oneof(fc.constantFrom(null, 1, 2, 3, 999), value),
    },
    { requiredKeys: ['name'] }
  )
  const anyFields = fc.record(
    Object.fromEntries(
      ['name', 'description', 'price', 'in_stock', 'maker_id', 'id', 'maker', 'reviews', 'secret'].map((field) => [
        field,
        value,
      ])
    ),
    { requiredKeys: [] }
  )
  const body = fc.oneof(
    { weight: 3, arbitrary: plausible },
    { weight: 2, arbitrary: anyFields },
    { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), value, { maxKeys: 4 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) }
  )
  const write = fc
    .tuple(fc.constantFrom('POST', 'PUT', 'PATCH') as fc.Arbitrary<'POST' | 'PUT' | 'PATCH'>, id, body)
    .map(([method, segment, sent]): HostileRequest => {
      const url = method === 'POST' ? '/products' : `/products/${segment}`
      const isObject = typeof sent === 'object' && sent !== null && !Array.isArray(sent)
      return {
        label: `${method} ${url.slice(0, 40)} ${json(sent).slice(0, 80)}`,
        method,
        url,
        body: json(sent),
        ...(isObject ? { sent: sent as Record<string, unknown> } : {}),
      }
    })
  return fc.sample(
    fc.oneof({ weight: 3, arbitrary: list }, { weight: 1, arbitrary: element }, { weight: 3, arbitrary: write }),
    { numRuns: runs, seed }
  )
}

// ---- the atomic batch (issue 38 item 3): POST /batch, whose operations reach the same routes ---------------------

/** A POST /batch request of these operations (or of this raw body). */
function batchRequest (label: string, operations: unknown, expect?: number): HostileRequest {
  const body = json({ operations })
  return { label: `BATCH ${label}`, method: 'POST', url: '/batch', body, ...(expect === undefined ? {} : { expect }) }
}

/**
 * Batches with injections in every part of an operation (method, path, body, If-Match, reference), malformed
 * references, paths that try to leave the viewsets (the batch itself, dot segments), and fast-check operations.
 */
export function batchCorpus (ids: { product: number; bare: number }, runs: number, seed: number): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (request: HostileRequest) => requests.push(request)
  const create = (name: string) => ({ method: 'POST', path: '/products', body: { name } })
  add(batchRequest('create and reference', [
    create(uniqueName()),
    { method: 'PATCH', path: `/products/${ids.product}`, body: { maker_id: null, description: { $result: 0, pointer: '/name' } } },
  ], 200))
  for (const payload of injections.slice(0, 40)) {
    add(batchRequest(`path ${json(payload).slice(0, 30)}`, [create(uniqueName()), { method: 'DELETE', path: payload }], 400))
    add(batchRequest(`method ${json(payload).slice(0, 30)}`, [create(uniqueName()), { method: payload, path: '/products' }], 400))
    add(batchRequest(`body ${json(payload).slice(0, 30)}`, [create(uniqueName()), { method: 'POST', path: '/products', body: { name: uniqueName(), price: payload } }], 400))
    add(batchRequest(`if-match ${json(payload).slice(0, 30)}`, [create(uniqueName()), { method: 'PATCH', path: `/products/${ids.product}`, body: { price: 1 }, headers: { 'if-match': payload } }]))
    add(batchRequest(`pointer ${json(payload).slice(0, 30)}`, [create(uniqueName()), { method: 'POST', path: '/products', body: { name: { $result: 0, pointer: payload } } }], 400))
  }
  for (const path of ['/batch', '/products/../batch', '/products/%2e%2e/batch', '/products/./1', '//products', '/products\\..\\batch', '/elsewhere', '/']) {
    add(batchRequest(`path ${path}`, [create(uniqueName()), { method: 'POST', path, body: { operations: [] } }], 400))
  }
  for (const reference of [{ $result: '0', pointer: '/id' }, { $result: 1e300, pointer: '/id' }, { $result: 0.5, pointer: '/id' }, { $result: 0, pointer: 7 }, { $result: 0, pointer: '/id', more: 1 }, { $result: 0 }]) {
    add(batchRequest(`reference ${json(reference)}`, [create(uniqueName()), { method: 'POST', path: '/products', body: { name: uniqueName(), maker_id: reference } }], 400))
  }
  add(batchRequest('a missing row', [create(uniqueName()), { method: 'DELETE', path: '/products/999999' }], 404))
  add(batchRequest('a referenced row', [create(uniqueName()), { method: 'DELETE', path: `/products/${ids.product}` }], 409))
  add(batchRequest('no operations', [], 400))
  add(batchRequest('101 operations', Array.from({ length: 101 }, () => create(uniqueName())), 400))
  add(batchRequest('operations not an array', { 0: create(uniqueName()) }, 400))
  add(batchRequest('an operation not an object', ['POST /products'], 400))
  add(batchRequest('a header besides If-Match', [{ ...create(uniqueName()), headers: { authorization: 'Bearer x' } }], 400))
  add({ label: 'BATCH not JSON', method: 'POST', url: '/batch', body: '{"operations":[', expect: 400 })
  add({ label: 'BATCH an array', method: 'POST', url: '/batch', body: '[]', expect: 400 })
  add({ label: 'BATCH text/plain', method: 'POST', url: '/batch', body: 'operations', contentType: 'text/plain', expect: 415 })
  const reference = fc.record({ $result: fc.integer({ min: -1, max: 3 }), pointer: text })
  const operation = fc.record({
    method: fc.oneof(fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE'), text),
    path: fc.oneof(fc.constantFrom('/products', `/products/${ids.product}`, `/products/${ids.bare}`), text),
    body: fc.oneof(value, fc.record({ name: text, price: value, maker_id: fc.oneof(value, reference) })),
    headers: fc.record({ 'if-match': text }, { requiredKeys: [] }),
  }, { requiredKeys: ['method', 'path'] })
  const generated = fc.array(operation, { minLength: 1, maxLength: 4 })
    .map((operations) => batchRequest(json(operations).slice(0, 80), operations))
  return [...requests, ...fc.sample(generated, { numRuns: runs, seed })]
}

/**
 * Nested bodies (issue 38 item 2) against a products viewset whose `maker` (to-one) and `reviews` (one-to-many) are
 * writable: injections as references, children, children's keys and fields, wrong shapes, and rows of another parent.
 * `foreignReview` is a review of another product than `ids.product`.
 */
export function nestedCorpus (ids: { product: number; foreignReview: number }, maxBulk: number): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (label: string, method: 'POST' | 'PATCH', sent: Record<string, unknown>, expect?: number) => {
    const url = method === 'POST' ? '/products' : `/products/${ids.product}`
    requests.push({ label, method, url, body: json(sent), sent, ...(expect === undefined ? {} : { expect }) })
  }
  for (const payload of injections) {
    const short = json(payload).slice(0, 30)
    add(`POST maker {id: ${short}}`, 'POST', { name: uniqueName(), maker: { id: payload } }, 400)
    add(`POST maker ${short}`, 'POST', { name: uniqueName(), maker: payload }, 400)
    add(`POST reviews ${short}`, 'POST', { name: uniqueName(), reviews: payload }, 400)
    add(`POST reviews [${short}]`, 'POST', { name: uniqueName(), reviews: [payload] }, 400)
    add(`POST reviews [{body: ${short}}]`, 'POST', { name: uniqueName(), reviews: [{ body: payload }] })
    add(`PATCH reviews [{id: ${short}}]`, 'PATCH', { reviews: [{ id: payload, body: 'x' }] }, 400)
    add(`PATCH reviews [{${short}: 1}]`, 'PATCH', { reviews: [{ [payload]: 1 }] }, 400)
    add(`PATCH reviews [{product_id: ${short}}]`, 'PATCH', { reviews: [{ product_id: payload }] })
  }
  // Past 2^31 - 1 a key is a 400 where the column is a 32-bit integer, else a row that does not exist.
  for (const id of [0, -1, 999999, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
    const small = id < 2 ** 31
    add(`POST maker {id: ${id}}`, 'POST', { name: uniqueName(), maker: { id } }, small ? 409 : undefined)
    add(`PATCH reviews [{id: ${id}}]`, 'PATCH', { reviews: [{ id, body: 'x' }] }, small ? 404 : undefined)
  }
  // A review of another product is not this product's to change.
  add('PATCH reviews [{id: foreign}]', 'PATCH', { name: uniqueName(), reviews: [{ id: ids.foreignReview }] }, 404)
  add('PATCH reviews past maxBulk', 'PATCH', { reviews: Array.from({ length: maxBulk + 1 }, () => ({})) }, 400)
  add('POST reviews, one bad of many', 'POST', {
    name: uniqueName(), reviews: [{ body: 'fine' }, { body: 'fine' }, { body: 7 }],
  }, 400)
  add('POST maker and reviews', 'POST', { name: uniqueName(), maker: { id: 1 }, reviews: [{ body: 'a' }] }, 201)
  return requests
}

// ---- the bulk writes (issue 38 item 1) ------------------------------------------------------------

/** Prefer and If-Match values a client may get wrong on PATCH_MANY, DELETE_MANY and BULK_PATCH. */
const bulkHeaders: ReadonlyArray<Record<string, string>> = [
  { prefer: 'max-affected=-1' },
  { prefer: 'max-affected=0' },
  { prefer: 'max-affected=1e3' },
  { prefer: 'max-affected=99999999999999999999' },
  { prefer: 'max-affected=' },
  { prefer: 'max-affected="2"; x=1, return=representation' },
  { prefer: 'return=representation, max-affected=1' },
  { prefer: 'return=minimal' },
  { prefer: 'return=' + 'x'.repeat(3000) },
  { 'if-match': '"1"' },
  { 'if-match': 'W/"x"' },
  { 'if-match': '*, "1"' },
  { 'if-match': '' },
]

/**
 * Hostile requests to the bulk writes: injections in every filter parameter of `PATCH /products?…` and
 * `DELETE /products?…`, in the bodies and keys of `PATCH /products/bulk`, hostile Prefer and If-Match headers, no
 * filter at all, and a fast-check part. Run last: a bulk DELETE that succeeds removes rows the others address.
 */
export function bulkCorpus (ids: { product: number; bare: number }, runs: number, seed: number): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (request: HostileRequest) => requests.push(request)
  for (const [parameter, payload] of spread(listParameters, injections, 3)) {
    const url = `/products?${queryValue(parameter, payload)}`
    add({ label: `PATCH_MANY ?${parameter}=${json(payload).slice(0, 40)}`, method: 'PATCH', url, body: json({ description: 'bulk' }) })
    add({ label: `DELETE_MANY ?${parameter}=${json(payload).slice(0, 40)}`, method: 'DELETE', url })
  }
  for (const [field, payload] of spread(bodyFields, injections, 3)) {
    const url = `/products?name=${encodeURIComponent(`product ${ids.bare}`)}`
    add({ label: `PATCH_MANY ${field}=${json(payload).slice(0, 40)}`, method: 'PATCH', url, body: json({ [field]: payload }) })
    add({
      label: `BULK_PATCH ${field}=${json(payload).slice(0, 40)}`,
      method: 'PATCH',
      url: '/products/bulk',
      body: json([{ id: ids.bare, [field]: payload }]),
    })
  }
  for (const payload of injections) {
    add({ label: `BULK_PATCH id=${json(payload).slice(0, 40)}`, method: 'PATCH', url: '/products/bulk', body: json([{ id: payload, name: uniqueName() }]) })
  }
  for (const headers of bulkHeaders) {
    const label = json(headers).slice(0, 60)
    add({ label: `PATCH_MANY ${label}`, method: 'PATCH', url: '/products?price__gte=0', body: json({ description: 'h' }), headers })
    add({ label: `DELETE_MANY ${label}`, method: 'DELETE', url: '/products?price__gte=0', headers })
    add({ label: `BULK_PATCH ${label}`, method: 'PATCH', url: '/products/bulk', body: json([{ id: ids.product, description: 'h' }]), headers })
  }
  // No filter, or only what is no filter: a 400, nothing written.
  for (const url of ['/products', '/products?limit=1', '/products?order_by=id', '/products?offset=0', '/products?fields=id']) {
    add({ label: `PATCH_MANY ${url}`, method: 'PATCH', url, body: json({ description: 'all' }), expect: 400 })
    add({ label: `DELETE_MANY ${url}`, method: 'DELETE', url, expect: 400 })
  }
  for (const body of ['[]', '{}', '[null]', '[1]', '[[]]', json([{ id: ids.product }, { id: ids.product }]), '[{"id":1', json([{}])]) {
    add({ label: `BULK_PATCH ${body.slice(0, 40)}`, method: 'PATCH', url: '/products/bulk', body })
  }
  add({ label: 'PATCH_MANY not JSON', method: 'PATCH', url: '/products?price__gte=0', body: '{"description":', expect: 400 })
  return [...requests, ...generatedBulk(ids, runs, seed)]
}

/** Bulk writes drawn by fast-check: random filters, bodies and arrays of partial rows. */
function generatedBulk (ids: { product: number; bare: number }, runs: number, seed: number): HostileRequest[] {
  const pairs = fc.array(
    fc.tuple(fc.oneof(fc.constantFrom(...listParameters, 'secret', 'or', 'not.and'), fc.string({ maxLength: 8 })), text),
    { maxLength: 4 }
  )
  const fields = fc.dictionary(fc.constantFrom(...bodyFields), value, { maxKeys: 3 })
  const many = fc.tuple(fc.constantFrom('PATCH', 'DELETE') as fc.Arbitrary<'PATCH' | 'DELETE'>, pairs, fields)
    .map(([method, entries, sent]): HostileRequest => {
      let url: string
      try {
        url = `/products?${query(entries)}`
      } catch {
        url = '/products?search=%ED%A0%80'
      }
      return {
        label: `${method}_MANY ${url.slice(0, 60)} ${json(sent).slice(0, 60)}`,
        method,
        url,
        ...(method === 'PATCH' ? { body: json(sent) } : {}),
      }
    })
  const key = fc.oneof(fc.constantFrom(ids.product, ids.bare, 999), value)
  const elements = fc.array(fc.tuple(key, fields).map(([id, sent]) => ({ ...sent, id })), { maxLength: 4 })
  const bulk = fc.oneof(elements, fc.jsonValue({ maxDepth: 3 })).map((sent): HostileRequest => ({
    label: `BULK_PATCH ${json(sent).slice(0, 100)}`,
    method: 'PATCH',
    url: '/products/bulk',
    body: json(sent),
  }))
  return fc.sample(fc.oneof(many, bulk), { numRuns: runs, seed })
}

/**
 * Composite keys (issue 39): `/product-tags/{product_id},{tag}` (an integer part and a string part) with the payloads
 * in either part, the wrong number of parts, raw and encoded commas and slashes, non-canonical integers, empty parts,
 * and bodies whose key parts differ from the path. No 5xx; a 4xx changes no row.
 */
export function compositeCorpus (product: number): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (request: HostileRequest) => requests.push(request)
  const methods = ['GET', 'HEAD', 'PATCH', 'PUT', 'DELETE'] as const
  const body = (method: string, key: Record<string, unknown> = {}) =>
    method === 'PATCH' || method === 'PUT' ? { body: json({ product_id: product, tag: 'red', note: 'n', ...key }) } : {}
  for (const [method, payload] of spread(methods, injections, 2)) {
    const segments = [`${idSegment(payload)},red`, `${product},${idSegment(payload)}`, `${idSegment(payload)}`]
    for (const segment of segments) {
      add({ label: `${method} composite /${segment.slice(0, 40)}`, method, url: `/product-tags/${segment}`, ...body(method) })
    }
  }
  const forms = [
    '', ',', ',,', `${product}`, `${product},`, ',red', `${product},red,`, `${product},red,x`, `0${product},red`,
    `+${product},red`, `${product}.0,red`, '1e0,red', '0x1,red', `${product}%2Cred`, `${product},re%2Cd`,
    `${product},re%2Fd`, `${product},%`, `${product},%zz`, `${product},%00`, '99999999999999999999,red',
    '-0,red', `${product},${'x'.repeat(300)}`, `${product},red%20`, `${product}%2C`, '%2C,%2C',
  ]
  for (const form of forms) {
    for (const method of methods) {
      add({ label: `${method} composite form ${form.slice(0, 40)}`, method, url: `/product-tags/${form}`, ...body(method) })
    }
  }
  for (const method of ['PATCH', 'PUT'] as const) {
    for (const key of [{ product_id: product + 1 }, { tag: 'blue' }, { tag: null }, { product_id: '1' }, { tag: 7 }]) {
      add({
        label: `${method} composite body key ${json(key)}`,
        method,
        url: `/product-tags/${product},red`,
        ...body(method, key),
        expect: 400,
      })
    }
  }
  for (const payload of injections.slice(0, 20)) {
    add({ label: `POST composite tag=${json(payload).slice(0, 40)}`, method: 'POST', url: '/product-tags', body: json({ product_id: product, tag: payload }), sent: { tag: payload } })
  }
  add({ label: 'POST composite missing part', method: 'POST', url: '/product-tags', body: json({ product_id: product }), expect: 400 })
  return requests
}

// ---- soft delete (issue 39 item 2) ----------------------------------------------------------------

/**
 * Hostile requests to a soft-deleting viewset at `/archive` (over the products, with RESTORE and PURGE, and a
 * showDeleted that admits nobody): injections as the key of DELETE, RESTORE and PURGE and as `?deleted=`, bodies and
 * headers those routes do not take, and `?deleted=` itself (a 403). Its own rows: product 1, which reviews keep from
 * removal.
 */
export function softDeleteCorpus (ids: { product: number; bare: number }): HostileRequest[] {
  const requests: HostileRequest[] = []
  const add = (request: HostileRequest) => requests.push(request)
  for (const payload of injections) {
    const id = idSegment(payload)
    const label = json(payload).slice(0, 40)
    add({ label: `RESTORE id=${label}`, method: 'POST', url: `/archive/${id}/restore` })
    add({ label: `PURGE id=${label}`, method: 'DELETE', url: `/archive/${id}/purge` })
    add({ label: `soft DELETE id=${label}`, method: 'DELETE', url: `/archive/${id}` })
    const deleted = queryValue('deleted', payload)
    add({ label: `LIST ?deleted=${label}`, method: 'GET', url: `/archive?${deleted}`, expect: 400 })
    add({ label: `GET ?deleted=${label}`, method: 'GET', url: `/archive/${ids.product}?${deleted}`, expect: 400 })
  }
  for (const deleted of ['include', 'only']) {
    add({ label: `LIST ?deleted=${deleted}`, method: 'GET', url: `/archive?deleted=${deleted}`, expect: 403 })
    add({ label: `GET ?deleted=${deleted}`, method: 'GET', url: `/archive/${ids.bare}?deleted=${deleted}`, expect: 403 })
  }
  for (const headers of [{ 'if-match': '"x"' }, { 'if-match': 'W/"1"' }, { 'if-match': '' }, { 'if-match': '*, "1"' }]) {
    const label = json(headers)
    add({ label: `RESTORE ${label}`, method: 'POST', url: `/archive/${ids.product}/restore`, headers })
    add({ label: `PURGE ${label}`, method: 'DELETE', url: `/archive/${ids.product}/purge`, headers })
  }
  for (const body of ['{}', '{"deleted_at":null}', '[]', '{"x":', 'null']) {
    add({ label: `RESTORE body ${body}`, method: 'POST', url: `/archive/${ids.product}/restore`, body })
  }
  add({ label: 'GET /archive/1/restore', method: 'GET', url: `/archive/${ids.bare}/restore`, expect: 405 })
  add({ label: 'PUT /archive/1/purge', method: 'PUT', url: `/archive/${ids.bare}/purge`, body: '{}', expect: 405 })
  // Product 1 (which reviews reference, so it is never removed): deleted, deleted again, restored; then purged, a 409.
  add({ label: 'soft DELETE product', method: 'DELETE', url: `/archive/${ids.product}`, expect: 204 })
  add({ label: 'soft DELETE product again', method: 'DELETE', url: `/archive/${ids.product}`, expect: 404 })
  add({ label: 'RESTORE product', method: 'POST', url: `/archive/${ids.product}/restore`, expect: 200 })
  add({ label: 'PURGE missing', method: 'DELETE', url: '/archive/999999/purge', expect: 404 })
  add({ label: 'PURGE product', method: 'DELETE', url: `/archive/${ids.product}/purge` })
  return requests
}

/** Positions `changed_since` must refuse (400): signs, fractions, padding, past a BIGINT, and every injection. */
const badPositions: readonly string[] = ['-1', '01', '1.5', '1e3', '0x10', ' 0', '0 ', '9223372036854775808', '99999999999999999999']

/**
 * Hostile requests to `GET /products?changed_since=` (issue 40, item 5): malformed positions (a 400 each), injections
 * in every LIST parameter next to a valid position (its filters are evaluated on stored versions too), positions the
 * history does not hold, and what a page of changes does not take.
 */
export function changesCorpus (): HostileRequest[] {
  const requests: HostileRequest[] = []
  for (const position of [...badPositions, ...injections]) {
    const url = `/products?${queryValue('changed_since', position)}`
    // An injection that is a BIGINT's digits (9007199254740993) is a position: answered, not refused.
    const valid = /^(?:0|[1-9][0-9]{0,18})$/.test(position) && BigInt(position) < 2n ** 63n
    requests.push({ label: `changed_since=${json(position).slice(0, 40)}`, method: 'GET', url, ...(valid ? {} : { expect: 400 }) })
  }
  for (const [parameter, payload] of spread(listParameters, injections, 2)) {
    const url = `/products?changed_since=0&${queryValue(parameter, payload)}`
    requests.push({ label: `changed_since=0 ?${parameter}=${json(payload).slice(0, 40)}`, method: 'GET', url })
  }
  for (const url of ['/products?changed_since=0', '/products?changed_since=0&name__contains=x&limit=1',
    '/products?changed_since=1&price__gte=0', '/products?changed_since=123456789&limit=1']) {
    requests.push({ label: url, method: 'GET', url })
  }
  for (const extra of ['order_by=id', 'offset=1', 'count=true', 'changed_since=1']) {
    requests.push({ label: `changed_since=0&${extra}`, method: 'GET', url: `/products?changed_since=0&${extra}`, expect: 400 })
  }
  return requests
}

// ---- a row's history (issue 39 item 3) ------------------------------------------------------------

/** Times `?as_of=` may be sent as, well-formed or not. */
const asOfValues: readonly string[] = [
  '2026-11-26T20:01:13.123Z', '2026-11-26T20:01:13+02:00', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z',
  '2026-11-26', '2026-13-45T99:99:99Z', 'now', '', '0', '-1', '1e30', '2026-11-26T20:01:13.123456789Z',
  '+275760-09-13T00:00:00Z', '2026-11-26T20:01:13Z,2027-01-01T00:00:00Z',
]

/**
 * The HISTORY route and `?as_of=` (a products viewset with `history` and `'HISTORY'` in its methods): injections in
 * the path id, `limit`, `cursor` and `as_of`, and odd times. Reads only: none may change a row.
 */
export function historyCorpus (ids: { product: number }): HostileRequest[] {
  const requests: HostileRequest[] = []
  const get = (label: string, url: string, expect?: number) => {
    requests.push({ label, method: 'GET', url, ...(expect === undefined ? {} : { expect }) })
  }
  const row = `/products/${ids.product}`
  for (const payload of injections) {
    const short = json(payload).slice(0, 40)
    get(`HISTORY /products/${short}/history`, `/products/${idSegment(payload)}/history`)
    get(`HISTORY ?cursor=${short}`, `${row}/history?${queryValue('cursor', payload)}`)
    get(`HISTORY ?limit=${short}`, `${row}/history?${queryValue('limit', payload)}`)
    get(`GET ?as_of=${short}`, `${row}?${queryValue('as_of', payload)}`, 400)
  }
  for (const value of asOfValues) get(`GET ?as_of=${value}`, `${row}?${queryValue('as_of', value)}`)
  for (const cursor of ['0', '1', '9223372036854775807', '99999999999999999999', '-1']) {
    get(`HISTORY ?cursor=${cursor}`, `${row}/history?cursor=${cursor}`)
  }
  get('HISTORY of a missing row', '/products/999999/history', 404)
  requests.push({ label: 'POST to HISTORY', method: 'POST', url: `${row}/history`, body: '{}', expect: 405 })
  return requests
}
