import type { FieldError } from '../errors.js'
import { isRecord } from '../schema/object-schema.js'

// The errors of a nested write's children (http/nested-writes.ts), named by the JSON pointer of their element in the
// parent's body (`/books/2/title`), as the parent's answer lists them.

/** An error of a child's write, renamed to its element: each listed field under `pointer`, the detail saying so. */
export function pointed (error: unknown, pointer: string): unknown {
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string') return error
  if (!error.code.startsWith('FST_VIEWSET_')) return error
  const listed = 'errors' in error && Array.isArray(error.errors) ? error.errors : undefined
  const renamed: FieldError[] = (listed ?? []).filter(isRecord).map((entry) => ({
    in: 'body',
    field: typeof entry.field === 'string' && entry.field !== ''
      ? `${pointer}/${entry.field.replace(/^\//, '')}`
      : pointer,
    message: typeof entry.message === 'string' ? entry.message : 'is not valid',
  }))
  const entries = renamed.length > 0 ? renamed : [{ in: 'body', field: pointer, message: error.message }]
  Object.assign(error, { errors: entries, message: `${error.message} (${pointer})` })
  return error
}

/** Ajv's errors of a child's body as field errors (JSON pointers). */
export function schemaErrors (errors: readonly unknown[]): FieldError[] {
  return errors.filter(isRecord).map((error) => {
    const at = typeof error.instancePath === 'string' ? error.instancePath : ''
    const params = isRecord(error.params) ? error.params : {}
    if (error.keyword === 'additionalProperties') {
      const field = `${at}/${String(params.additionalProperty)}`
      return { in: 'body', field, message: 'is not a field of this resource' }
    }
    if (error.keyword === 'required') {
      return { in: 'body', field: `${at}/${String(params.missingProperty)}`, message: 'is required' }
    }
    return { in: 'body', field: at, message: typeof error.message === 'string' ? error.message : 'is not valid' }
  })
}
