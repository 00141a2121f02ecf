import type { Row } from '../sql.js'
import type { RuleRequest } from '../relations/relation-rule.js'

/**
 * A condition on a row's version that a write must meet, checked in the write's transaction with the
 * row locked (resource.ts): `match` writes only when the row's tag is one of `tags` (strong comparison;
 * `*` is any row), `required` writes nothing (a 428: the client sent no `If-Match`). A missing row is a
 * 404 before either.
 *
 * @example
 * ```ts
 * override async updateElement (request: UpdateRequest<typeof Item>) {
 *   const precondition: Precondition | undefined = this.precondition(request)
 *   return await this.update(request.params.id, this.writable(request.body), this.db, precondition)
 * }
 * ```
 */
export type Precondition =
  | {
    readonly kind: 'match'
    readonly tags: '*' | readonly string[]
    /** The request whose relation rules the compared representation is read under, as its GET served it. */
    readonly reader?: RuleRequest | undefined
  }
  | { readonly kind: 'required' }

/** How a resource tells a row's version: its version column, else the tag of its representation. */
export interface Versioning {
  /** The integer column every update increments, when the viewset has one (`versionField`). */
  readonly versionField: string | undefined
  /** The entity tag of a row as stored, its relations loaded. */
  readonly tagOf: (row: Row) => string
  /** The relations a whole row is sent with (`defaultRelations`); `undefined` for all of them. */
  readonly relations?: ReadonlySet<string> | undefined
}
