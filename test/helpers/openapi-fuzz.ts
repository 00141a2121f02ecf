// Schemathesis-style traffic from an OpenAPI document, sent through Prism proxies to a live server:
// per operation, `runs` requests generated from the document's schemas (fast-check) and half as many
// invalid ones (a mutation of a valid one), in a stateful order (creates first; reads, replaces and
// patches of the created ids; deletes last, each followed by a read that must be 404). Every answer is
// checked four ways: the server answered no 5xx, Prism found no response violation, the contract's Ajv
// check (test/helpers/contract.ts) agrees, and an invalid request was not accepted.
import fc from 'fast-check'
import type { Arbitrary } from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { Contract } from './contract.js'
import type { OperationRef, Parameter, Schema } from './contract.js'
import { arbitraryOf, resolveSchema, validOf, wrongTypeOf } from './openapi-arbitraries.js'
import { headerViolations, prismProblem } from './prism.js'
import type { PrismProxy } from './prism.js'

export interface FuzzOptions {
  contract: Contract
  /** `--errors` proxy: valid traffic (a request it refuses is one the document refuses). */
  strict: PrismProxy
  /** Proxy without --errors: invalid traffic reaches the server; violations come in `sl-violations`. */
  lenient: PrismProxy
  /** A bearer token for the operations whose security names a scheme. */
  token?: string
  runs: number
  seed: number
}

/** What the traffic found, by kind; each entry is one request's story. */
export interface FuzzReport {
  requests: number
  perOperation: Map<string, number>
  statuses: Map<number, number>
  /** The server answered 5xx. */
  serverErrors: string[]
  /** Prism flagged a response (its 500 VIOLATIONS under --errors, any response entry of sl-violations otherwise). */
  prismResponse: string[]
  /** Prism refused a request the generator made from the document (generator or document at fault). */
  prismRefusedValid: string[]
  /** The contract's Ajv check flagged a response. */
  ajv: string[]
  /** An invalid request (Prism agrees it is invalid) answered 2xx. */
  invalidAccepted: string[]
  /** A request made from the document answered 400 or 415: the document is looser than the server. */
  validRejected: string[]
  /** A stateful link broke: a created row not readable, a deleted one still there. */
  stateful: string[]
  /** Invalid requests Prism's lenient proxy answered itself (it could not forward them: a body it cannot parse). */
  prismAnsweredInvalid: number
}

interface Request {
  label: string
  method: string
  path: string
  /** A list is sent as repeated keys (OpenAPI's form style, exploded: the default of a query parameter). */
  query?: Record<string, string | string[]>
  headers?: Record<string, string>
  body?: string
}

const form = 'application/x-www-form-urlencoded'
const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1')
const isElement = (ref: OperationRef) => /\{[^}]+\}$/.test(ref.path)
const collectionOf = (path: string) => path.replace(/\/\{[^}]+\}$/, '')

/** The JSON pointer of a parameter's schema: the operation's own list, else the path item's. */
function parameterPointer (ref: OperationRef, parameter: Parameter): string {
  const own = ref.operation.parameters?.indexOf(parameter) ?? -1
  if (own >= 0) return `${ref.pointer}/parameters/${own}/schema`
  return `#/paths/${escapePointer(ref.path)}/parameters/${ref.parameters.indexOf(parameter)}/schema`
}

const text = (value: unknown) => (Array.isArray(value) ? value.join(',') : String(value))

/** A query value as a server coerces it before its schema sees it (Ajv's coerceTypes). */
function coerced (schema: Schema | undefined, raw: string): unknown {
  const type = schema?.type
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(raw)) return Number(raw)
  if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true'
  return raw
}

/** One traffic run over every operation of a document. */
export class Fuzzer {
  readonly #options: FuzzOptions
  readonly report: FuzzReport = {
    requests: 0,
    perOperation: new Map(),
    statuses: new Map(),
    serverErrors: [],
    prismResponse: [],
    prismRefusedValid: [],
    ajv: [],
    invalidAccepted: [],
    validRejected: [],
    stateful: [],
    prismAnsweredInvalid: 0,
  }

  /** Ids created per collection path, and the ETag last seen for each element path. */
  readonly #ids = new Map<string, number[]>()
  readonly #etags = new Map<string, string>()
  #sample = 0

  constructor (options: FuzzOptions) {
    this.#options = options
  }

  /** One value of an arbitrary, deterministic for the run's seed. */
  #one<T>(arbitrary: Arbitrary<T>): T {
    const values = fc.sample(arbitrary, { numRuns: 1, seed: this.#options.seed + this.#sample++ })
    if (values.length !== 1) throw new Error('fast-check gave no sample')
    return values[0] as T // one sample, checked just above
  }

  #references (): number[] {
    return [...new Set([...this.#ids.values()].flatMap((ids) => ids.slice(0, 5)))]
  }

  /** Runs the whole traffic: creates, reads and writes, then deletes. */
  async run (): Promise<FuzzReport> {
    const operations = this.#options.contract.operations
    const posts = operations.filter((ref) => ref.method === 'post')
    // Two rounds of creates, so that a collection listed before its parent (books before authors) finds parents.
    for (let round = 0; round < 2; round++) {
      for (const ref of posts) await this.#valid(ref, Math.ceil(this.#options.runs / 2))
    }
    for (const ref of posts) await this.#invalid(ref)
    const middle = operations.filter((ref) => ref.method !== 'post' && ref.method !== 'delete')
    for (const ref of middle) {
      await this.#valid(ref, this.#options.runs)
      await this.#invalid(ref)
    }
    for (const ref of operations.filter((ref) => ref.method === 'delete')) {
      await this.#invalid(ref)
      await this.#valid(ref, this.#options.runs)
    }
    return this.report
  }

  #auth (ref: OperationRef): Record<string, string> {
    const named = (ref.operation.security ?? []).some((requirement) => Object.keys(requirement).length > 0)
    return named && this.#options.token !== undefined ? { authorization: `Bearer ${this.#options.token}` } : {}
  }

  #path (ref: OperationRef, id: string | number): string {
    return ref.path.replace(/\{[^}]+\}/g, encodeURIComponent(String(id)))
  }

  /** A valid request for `ref`, from the document's schemas and the ids created so far. */
  #validRequest (ref: OperationRef): Request {
    const { contract } = this.#options
    const headers: Record<string, string> = { ...this.#auth(ref) }
    const query: Record<string, string | string[]> = {}
    const optional = ref.parameters.filter((p) => p.in === 'query')
    for (const parameter of this.#one(fc.subarray(optional, { maxLength: Math.min(3, optional.length) }))) {
      const pointer = parameterPointer(ref, parameter)
      const arbitrary = arbitraryOf(contract.document, parameter.schema)
      const value = this.#one(validOf(contract, pointer, arbitrary))
      query[parameter.name] = Array.isArray(value) ? value.map(text) : text(value)
    }
    let path = ref.path
    let keyValue: unknown
    if (isElement(ref)) {
      const ids = this.#ids.get(collectionOf(ref.path)) ?? []
      const idParameter = ref.parameters.find((p) => p.in === 'path')
      const generated = idParameter === undefined ? fc.constant(1) : arbitraryOf(contract.document, idParameter.schema)
      const known = () => ({ weight: 5, arbitrary: fc.constantFrom(...ids) })
      const id = ids.length > 0 ? fc.oneof(known(), { weight: 1, arbitrary: generated }) : generated
      keyValue = this.#one(id)
      path = this.#path(ref, String(keyValue))
    }
    const names = new Set(ref.parameters.filter((p) => p.in === 'header').map((p) => p.name.toLowerCase()))
    const etag = this.#etags.get(path)
    for (const name of ['if-match', 'if-none-match'].filter((header) => names.has(header))) {
      const value = this.#one(fc.constantFrom(undefined, undefined, etag, '"stale"', '*'))
      if (value !== undefined) headers[name] = value
    }
    if (names.has('prefer') && this.#one(fc.boolean())) headers.prefer = 'resolution=merge-duplicates'
    const body = this.#keyed(ref, this.#body(ref), keyValue)
    if (body !== undefined) headers['content-type'] = body.type
    return { label: 'valid', method: ref.method.toUpperCase(), path, query, headers, ...(body === undefined ? {} : { body: body.text }) }
  }

  /**
   * A composite key's parts in a JSON body are the path's (`/book_tags/{book_id},{tag_id}`, issue 39): a part sent in
   * a PUT or PATCH body must equal the path's, else a 400 the document cannot express.
   */
  #keyed (ref: OperationRef, body: { type: string; text: string; value: unknown } | undefined, key: unknown) {
    const parts = ref.parameters.filter((p) => p.in === 'path').map((p) => p.name)
    const value = body?.value
    if (body === undefined || key === undefined || parts.length < 2 || typeof value !== 'object' || value === null) {
      return body
    }
    const keyed: Record<string, unknown> = { ...value }
    for (const part of parts) if (part in keyed) keyed[part] = key
    return body.type === form ? body : { ...body, text: JSON.stringify(keyed), value: keyed }
  }

  #body (ref: OperationRef): { type: string; text: string; value: unknown } | undefined {
    const { contract } = this.#options
    const content = ref.operation.requestBody?.content
    if (content === undefined) return undefined
    const types = Object.keys(content)
    const type = this.#one(fc.constantFrom(...types))
    const pointer = `${ref.pointer}/requestBody/content/${escapePointer(type)}/schema`
    const arbitrary = arbitraryOf(contract.document, content[type]?.schema, { references: this.#references() })
    const value = this.#one(validOf(contract, pointer, arbitrary))
    if (type === form) {
      const entries = Object.entries(value as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)])
      return { type, text: new URLSearchParams(entries).toString(), value }
    }
    return { type, text: JSON.stringify(value), value }
  }

  async #valid (ref: OperationRef, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const request = this.#validRequest(ref)
      const answer = await this.#send(this.#options.strict, ref, request)
      if (answer === undefined) continue
      // RFC 6749 §5.2: wrong credentials at a token endpoint are a 400 `invalid_grant`, not a refused request.
      const wrongCredentials = answer.status === 400 && answer.body.includes('"invalid_grant"')
      if ((answer.status === 400 && !wrongCredentials) || answer.status === 415) {
        const query = searchOf(request.query)
        this.report.validRejected.push(`${request.method} ${request.path}?${query} ${request.body ?? ''} → ${answer.body.slice(0, 300)}`)
      }
      await this.#follow(ref, request, answer)
    }
  }

  /** The stateful links: a created row is readable at its Location; a deleted one is gone. */
  async #follow (ref: OperationRef, request: Request, answer: Answer): Promise<void> {
    const key = `${ref.method.toUpperCase()} ${ref.path}`
    if (ref.method === 'post' && answer.status === 201) {
      const location = answer.headers.location
      const id = (JSON.parse(answer.body) as { id?: unknown }).id
      if (typeof id === 'number') this.#ids.set(ref.path, [...(this.#ids.get(ref.path) ?? []), id])
      if (typeof location === 'string') {
        const read = await this.#send(this.#options.strict, this.#options.contract.find('GET', location), {
          label: 'read what was created',
          method: 'GET',
          path: location,
          headers: this.#auth(ref),
        })
        if (read !== undefined && read.status !== 200) this.report.stateful.push(`${key} 201 then GET ${location} ${read.status}`)
        if (read?.headers.etag !== undefined) this.#etags.set(location, read.headers.etag)
      }
    }
    if (isElement(ref) && ['get', 'put', 'patch'].includes(ref.method) && answer.headers.etag !== undefined) {
      this.#etags.set(request.path, answer.headers.etag)
    }
    if (ref.method === 'delete' && answer.status === 204) {
      const ids = this.#ids.get(collectionOf(ref.path)) ?? []
      this.#ids.set(collectionOf(ref.path), ids.filter((id) => this.#path(ref, id) !== request.path))
      const read = await this.#send(this.#options.strict, this.#options.contract.find('GET', request.path), {
        label: 'read what was deleted',
        method: 'GET',
        path: request.path,
        headers: this.#auth(ref),
      })
      if (read !== undefined && read.status !== 404) this.report.stateful.push(`${key} 204 then GET ${read.status}`)
    }
  }

  /** Invalid requests: one mutation each of a valid one; Prism's lenient proxy forwards them. */
  async #invalid (ref: OperationRef): Promise<void> {
    for (let i = 0; i < Math.ceil(this.#options.runs / 2); i++) {
      const request = this.#mutate(ref, this.#validRequest(ref))
      if (request === undefined) continue
      const answer = await this.#send(this.#options.lenient, ref, request)
      if (answer === undefined) continue
      const requestViolations = answer.violations.filter((v) => v.location[0] === 'request' && v.severity === 'Error')
      if (answer.status < 300 && requestViolations.length > 0) {
        this.report.invalidAccepted.push(`${request.label} ${request.method} ${request.path} ${answer.status}: ${requestViolations.map((v) => v.message).join('; ')}`)
      }
    }
  }

  /** A mutation of a valid request that the document refuses, or undefined when none applies. */
  #mutate (ref: OperationRef, request: Request): Request | undefined {
    const { document } = this.#options.contract
    const mutations: Array<() => Request | undefined> = []
    const queryParameters = ref.parameters.filter((p) => p.in === 'query')
    if (queryParameters.length > 0) {
      mutations.push(() => {
        const parameter = this.#one(fc.constantFrom(...queryParameters))
        const raw = this.#one(fc.constantFrom('abc', '-1', '1.5', '1e400', '', ',', '99999999999999999999', 'a\u0000b', 'x'.repeat(300)))
        const pointer = parameterPointer(ref, parameter)
        if (this.#options.contract.validate(pointer, coerced(parameter.schema, raw)).length === 0) return undefined
        return { ...request, label: `bad query ${parameter.name}`, query: { ...request.query, [parameter.name]: raw } }
      })
    }
    if (isElement(ref)) {
      mutations.push(() => ({
        ...request,
        label: 'bad id',
        path: this.#path(ref, this.#one(fc.constantFrom('abc', '1.5', '0x1', '01', '-0', '9'.repeat(40), '\u00e9'))),
      }))
    }
    const content = ref.operation.requestBody?.content
    const type = request.headers?.['content-type']
    const schema = type === undefined ? undefined : content?.[type]?.schema
    const resolved = typeof schema?.$ref === 'string' ? resolveSchema(document, schema.$ref) : schema
    if (request.body !== undefined && type !== undefined && type !== form) {
      const value = JSON.parse(request.body) as Record<string, unknown>
      const properties = Object.entries((resolved?.properties ?? {}) as Record<string, Schema>) // its properties
        .filter(([, p]) => p.readOnly !== true)
      const required = (resolved?.required ?? []) as string[]
      const body = (label: string, text: string, headers: Record<string, string> = {}) =>
        ({ ...request, label, body: text, headers: { ...request.headers, ...headers } })
      if (properties.length > 0) {
        mutations.push(() => {
          const [name, property] = this.#one(fc.constantFrom(...properties))
          return body(`wrong type ${name}`, JSON.stringify({ ...value, [name]: this.#one(wrongTypeOf(document, property)) }))
        })
        const strings = properties.filter(([, p]) => JSON.stringify(p).includes('"string"') && (p as Schema).format === undefined)
        if (strings.length > 0) {
          mutations.push(() => {
            const [name] = this.#one(fc.constantFrom(...strings))
            // A lone surrogate, as JSON text can spell it (issue 34 item 3).
            return body(`lone surrogate ${name}`, JSON.stringify({ ...value, [name]: 'x' }).replace('"x"', '"lone-\\ud800-x"'))
          })
        }
      }
      if (required.length > 0) {
        mutations.push(() => {
          const name = this.#one(fc.constantFrom(...required))
          const { [name]: _, ...rest } = value
          return body(`missing ${name}`, JSON.stringify(rest))
        })
      }
      if (resolved?.additionalProperties === false) mutations.push(() => body('unknown property', JSON.stringify({ ...value, zz_unknown: 1 })))
      // Not `null`: Prism takes a JSON null for no body and forwards none, with the Content-Length of `null`.
      mutations.push(() => body('not an object', this.#one(fc.constantFrom('[]', '1', '"text"', 'true'))))
      mutations.push(() => body('gzip label', request.body ?? '{}', { 'content-encoding': 'gzip' }))
      mutations.push(() => body('wrong media type', request.body ?? '{}', { 'content-type': 'text/plain' }))
    }
    const pick = this.#one(fc.integer({ min: 0, max: Math.max(mutations.length - 1, 0) }))
    return mutations[pick]?.()
  }

  /** Sends through a proxy and checks the answer; undefined when Prism answered itself. */
  async #send (proxy: PrismProxy, ref: OperationRef | undefined, request: Request): Promise<Answer | undefined> {
    const search = searchOf(request.query)
    const url = `${proxy.origin}${request.path}${search === '' ? '' : `?${search}`}`
    const response = await fetch(url, {
      method: request.method,
      headers: request.headers ?? {},
      ...(request.body === undefined ? {} : { body: request.body }),
    })
    const body = await response.text()
    const headers = Object.fromEntries(response.headers)
    const violations = headerViolations(response.headers.get('sl-violations'))
    const where = `${request.label} ${request.method} ${request.path}${search === '' ? '' : `?${search}`}`
    const report = this.report
    report.requests++
    const key = ref === undefined ? 'unrouted' : `${ref.method.toUpperCase()} ${ref.path}`
    report.perOperation.set(key, (report.perOperation.get(key) ?? 0) + 1)
    const problem = prismProblem(body)
    if (problem !== undefined) {
      if (problem.type.endsWith('#VIOLATIONS')) {
        report.prismResponse.push(`${where} → ${JSON.stringify(problem.validation ?? []).slice(0, 400)}`)
      } else if (proxy.errors) {
        report.prismRefusedValid.push(`${where} ${request.body ?? ''} → ${problem.status} ${problem.detail ?? ''} ${JSON.stringify(problem.validation ?? []).slice(0, 300)}`)
      } else {
        report.prismAnsweredInvalid++
      }
      return undefined
    }
    report.statuses.set(response.status, (report.statuses.get(response.status) ?? 0) + 1)
    if (response.status >= 500) report.serverErrors.push(`${where} → ${response.status} ${body.slice(0, 300)}`)
    // Any severity: Prism reports an undocumented status as a Warning.
    for (const violation of violations.filter((v) => v.location[0] !== 'request')) {
      report.prismResponse.push(`${where} → ${response.status} ${violation.location.join('.')} ${violation.message}`)
    }
    // Contract.check reads only these three of an injected response.
    const injected = { statusCode: response.status, headers, body } as unknown as LightMyRequestResponse
    for (const violation of this.#options.contract.check({ method: request.method, url: `${request.path}?${search}` }, injected)) {
      report.ajv.push(`${where} → ${violation.message}`)
    }
    return { status: response.status, headers, body, violations }
  }
}

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
  violations: ReturnType<typeof headerViolations>
}

export { Contract }

/** The query string of a request's parameters, a list as repeated keys. */
function searchOf (query: Record<string, string | string[]> | undefined): string {
  const entries = Object.entries(query ?? {}).flatMap(([key, value]) =>
    (Array.isArray(value) ? value : [value]).map((item): [string, string] => [key, item]))
  return new URLSearchParams(entries).toString()
}
