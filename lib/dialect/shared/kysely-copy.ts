import { Kysely } from 'kysely'
import { invalidOption } from '../../errors.js'

/**
 * Whether a value looks like a Kysely instance although it is none of ours: it was made by another copy of
 * kysely (two versions installed, or a `file:`/linked checkout with its own node_modules). Such an instance
 * fails every `instanceof` the library asks (its adapters, its transactions), so it is refused by name here.
 */
function fromAnotherCopy (value: unknown): boolean {
  if (typeof value !== 'object' || value === null || value instanceof Kysely) return false
  return ['selectFrom', 'getExecutor', 'transaction'].every(
    (method) => method in value && typeof Reflect.get(value, method) === 'function'
  )
}

/**
 * Fails with a message naming the duplicate package when `value` (the option `option`) is a Kysely
 * instance from a copy of kysely other than the one fastify-viewsets imports (its peer dependency).
 *
 * @example
 * ```ts
 * checkKyselyCopy('db', options.db) // throws FST_VIEWSET_INVALID_OPTION for another copy's instance
 * ```
 */
export function checkKyselyCopy (option: string, value: unknown): void {
  if (!fromAnotherCopy(value)) return
  invalidOption(
    option,
    'this Kysely instance comes from another copy of the kysely package than the one fastify-viewsets imports ' +
      '(two copies are installed: see `npm ls kysely`). kysely is a peer dependency: install one version that ' +
      'fits its range in the app, then run `npm dedupe`, or pin it with an `overrides` entry in package.json ' +
      '(a linked checkout of fastify-viewsets must not have its own node_modules/kysely)'
  )
}
