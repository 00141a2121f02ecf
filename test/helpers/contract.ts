// Checks that what a server answers is what its OpenAPI 3.1 document promises: the status is documented,
// the documented headers are there and well formed, the headers a client acts on are declared, and the
// body validates against the response schema. Hand-written over Ajv because no kept library validates a
// response against an OpenAPI 3.1 operation (openapi-response-validator and express-openapi-validator
// are 3.0 only; Prism is a proxy, not a library): the document's schemas are JSON Schema 2020-12, so
// Ajv 2020 reads them once the whole document is added under one id and each schema is a JSON pointer.
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ErrorObject, ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

/** The parts of an OpenAPI 3.1 document the checker reads. */
export interface OpenApiDocument {
  openapi: string
  paths?: Record<string, PathItem>
  components?: {
    schemas?: Record<string, unknown>
    securitySchemes?: Record<string, SecurityScheme>
    [kind: string]: unknown
  }
  security?: Array<Record<string, string[]>>
  [key: string]: unknown
}
export interface SecurityScheme {
  type: string
  flows?: Record<string, { tokenUrl?: string }>
  [key: string]: unknown
}
export type PathItem = Partial<Record<HttpMethod, Operation>> & { parameters?: Parameter[] }
export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required?: boolean
  schema?: Schema
  example?: unknown
  examples?: Record<string, { value?: unknown }>
}
export interface MediaType {
  schema?: Schema
  example?: unknown
  examples?: Record<string, { value?: unknown }>
}
export interface Header {
  required?: boolean
  schema?: Schema
  description?: string
}
export interface Response {
  description?: string
  headers?: Record<string, Header>
  content?: Record<string, MediaType>
}
export interface Operation {
  operationId?: string
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content?: Record<string, MediaType> }
  responses?: Record<string, Response>
  security?: Array<Record<string, string[]>>
}
export type Schema = Record<string, unknown>

export const httpMethods = ['get', 'post', 'put', 'patch', 'delete'] as const
export type HttpMethod = (typeof httpMethods)[number]

/** One documented operation, with where it sits in the document. */
export interface OperationRef {
  method: HttpMethod
  /** The path template, as the document spells it (`/items/{id}`). */
  path: string
  operation: Operation
  /** Path-level and operation-level parameters, the operation's winning. */
  parameters: Parameter[]
  /** JSON pointer of the operation, for Ajv references into the document. */
  pointer: string
}

/** One way an answer breaks the document. `key` is stable across runs and dialects, to compare with a list of known
 * gaps. */
export interface Violation {
  kind: string
  key: string
  message: string
}

/** Headers that change what a client does: when sent, the document must declare them. */
export const meaningfulHeaders = [
  'location',
  'www-authenticate',
  'retry-after',
  'etag',
  'link',
  'x-total-count',
  'allow',
] as const

const escapePointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1')

/** An Ajv error as a short, run-independent string: array indexes become `*`. */
function errorKey (error: ErrorObject): string {
  return `${error.instancePath.replace(/\/\d+(?=\/|$)/g, '/*') || '/'}:${error.keyword}`
}

/**
 * The contract of one app: its document, compiled once, and the checks of an exchange against it.
 *
 * @example
 * ```ts
 * const contract = await Contract.of(app)
 * const response = await app.inject({ method: 'GET', url: '/items/1' })
 * assert.deepEqual(contract.check({ method: 'GET', url: '/items/1' }, response), [])
 * ```
 */
export class Contract {
  readonly document: OpenApiDocument
  readonly operations: readonly OperationRef[]
  readonly #ajv: Ajv2020
  readonly #validators = new Map<string, ValidateFunction>()
  readonly #matchers: Array<{ regex: RegExp; path: string }>

  constructor (document: OpenApiDocument) {
    this.document = document
    // strict off: the document carries OpenAPI words (example, xml, discriminator) Ajv doesn't know.
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
    addFormats.default(this.#ajv)
    this.#ajv.addSchema(document, 'openapi.json')
    const operations: OperationRef[] = []
    for (const [path, item] of Object.entries(document.paths ?? {})) {
      for (const method of httpMethods) {
        const operation = item[method]
        if (operation === undefined) continue
        const own = operation.parameters ?? []
        const inherited = (item.parameters ?? []).filter((p) => !own.some((o) => o.name === p.name && o.in === p.in))
        operations.push({
          method,
          path,
          operation,
          parameters: [...inherited, ...own],
          pointer: `#/paths/${escapePointer(path)}/${method}`,
        })
      }
    }
    this.operations = operations
    // Literal paths before templated ones, as routers do (`/items/stats` before `/items/{id}`).
    this.#matchers = Object.keys(document.paths ?? {})
      .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
      .map((path) => ({
        path,
        regex: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`),
      }))
  }

  /** Fetches and compiles the document an app serves at `/docs/json`. */
  static async of (app: FastifyInstance, url = '/docs/json'): Promise<Contract> {
    const response = await app.inject({ method: 'GET', url })
    if (response.statusCode !== 200) throw new Error(`GET ${url} answered ${response.statusCode}`)
    return new Contract(response.json())
  }

  /** The document's path template that a request path falls under, if any. */
  template (url: string): string | undefined {
    const path = url.split('?')[0] ?? url
    return this.#matchers.find((matcher) => matcher.regex.test(path))?.path
  }

  /** The documented operation that answers `method url`, if any. */
  find (method: string, url: string): OperationRef | undefined {
    const path = this.template(url)
    return this.operations.find((op) => op.path === path && op.method === method.toLowerCase())
  }

  /** Validates a value against the schema at a JSON pointer of the document; the errors as short keys. */
  validate (pointer: string, value: unknown): string[] {
    let validate = this.#validators.get(pointer)
    if (validate === undefined) {
      validate = this.#ajv.compile({ $ref: `openapi.json${pointer}` })
      this.#validators.set(pointer, validate)
    }
    if (validate(value)) return []
    return [...new Set((validate.errors ?? []).map(errorKey))].sort()
  }

  /**
   * Everything in an answer that the document does not promise. An exchange on a documented path with
   * an undocumented method must be a 405 with `Allow`.
   */
  check (request: { method: string; url: string }, response: LightMyRequestResponse): Violation[] {
    const method = request.method.toUpperCase()
    const status = response.statusCode
    const path = this.template(request.url) ?? request.url.split('?')[0] ?? request.url
    const violations: Violation[] = []
    const add = (kind: string, detail: string, message: string) => {
      violations.push({ kind, key: `${kind} ${method} ${path} ${status}${detail === '' ? '' : ` ${detail}`}`, message })
    }
    const ref = this.find(method, request.url)
    if (ref === undefined) {
      if (status !== 405) { add('operation-undocumented', '', `${method} ${request.url} answered ${status} but no operation documents it`) } else if (response.headers.allow === undefined) add('allow-missing', '', `405 without Allow on ${request.url}`)
      return violations
    }
    const responses = ref.operation.responses ?? {}
    const code = String(status)
    const key =
      code in responses
        ? code
        : `${code[0]}XX` in responses
          ? `${code[0]}XX`
          : 'default' in responses
            ? 'default'
            : undefined
    if (key === undefined) {
      add(
        'status-undocumented',
        '',
        `${method} ${request.url} answered ${status}, documented: ${Object.keys(responses).join(', ')}; body ${response.body.slice(0, 200)}`
      )
      return violations
    }
    const documented = responses[key] ?? {}
    const pointer = `${ref.pointer}/responses/${escapePointer(key)}`
    const declared = new Map(
      Object.entries(documented.headers ?? {}).map(([name, header]) => [name.toLowerCase(), { name, header }])
    )

    for (const [lower, { name, header }] of declared) {
      const raw = response.headers[lower]
      if (raw === undefined) {
        if (header.required === true) add('header-missing', lower, `documented required header ${name} not sent`)
        continue
      }
      if (header.schema === undefined) continue
      const value = Array.isArray(raw) ? raw.join(', ') : String(raw)
      const type = header.schema.type
      // A header is text; a number-typed one must be a plain decimal to be the number it says.
      const typed =
        type === 'integer' || type === 'number' ? (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value) : value
      const errors = this.validate(`${pointer}/headers/${escapePointer(name)}/schema`, typed)
      if (errors.length > 0) {
        add('header-invalid', lower, `${name}: ${JSON.stringify(value)} fails ${errors.join(', ')}`)
      }
    }
    for (const header of meaningfulHeaders) {
      if (response.headers[header] !== undefined && !declared.has(header)) {
        add('header-undeclared', header, `${header}: ${String(response.headers[header])} sent but not declared`)
      }
    }

    // The documented media type: the type with its parameters but charset (a `?fields=` answer has a profile).
    const contentType = String(response.headers['content-type'] ?? '')
      .split(';')
      .map((part) => part.trim())
      .filter((part, i) => i === 0 || (part !== '' && !/^charset=/i.test(part)))
      .join('; ')
    const content = documented.content ?? {}
    if (response.body === '') {
      if (Object.keys(content).length > 0 && status !== 304 && method !== 'HEAD') {
        add('body-missing', '', 'documented content but empty body')
      }
      return violations
    }
    const media = content[contentType]
    if (media === undefined) {
      add(
        'content-type-undocumented',
        contentType,
        `content-type ${contentType} not among ${Object.keys(content).join(', ') || 'none'}; body ${response.body.slice(0, 200)}`
      )
      return violations
    }
    if (media.schema === undefined) return violations
    let body: unknown
    try {
      body = JSON.parse(response.body)
    } catch {
      add('body-not-json', '', `not JSON: ${response.body.slice(0, 100)}`)
      return violations
    }
    const errors = this.validate(`${pointer}/content/${escapePointer(contentType)}/schema`, body)
    if (errors.length > 0) {
      add('body-invalid', errors.join(' '), `body ${response.body.slice(0, 300)} fails ${errors.join(', ')}`)
    }
    return violations
  }
}
