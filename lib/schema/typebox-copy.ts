import { invalidOption } from '../errors.js'
import { isRecord } from './object-schema.js'

// Copies of @sinclair/typebox 0.26 to 0.34 mark schemas with the same global symbols (`Symbol.for('TypeBox.Kind')`),
// so a schema from any of them reads the same here: only TypeScript tells them apart. Two others do not:
// TypeBox 1.x (the `typebox` package) marks kinds and `Readonly` with `~kind` and `~readonly` keys, and
// @sinclair/typebox before 0.26 marks `Readonly` with `Symbol.for('TypeBox.Modifier')`. The library would miss
// their `Readonly` marks (a read-only field would become writable), so they are refused.

const modifier = Symbol.for('TypeBox.Modifier')

/** Which other TypeBox made this schema or one of its fields, or `undefined` for ours (or plain JSON Schema). */
function otherTypeBox (schema: Record<string, unknown>): string | undefined {
  const parts = [schema, ...(isRecord(schema.properties) ? Object.values(schema.properties) : [])]
  if (parts.some((part) => isRecord(part) && '~kind' in part)) return 'the `typebox` package (TypeBox 1.x)'
  if (parts.some((part) => isRecord(part) && modifier in part)) return '@sinclair/typebox older than 0.26'
  return undefined
}

/**
 * Fails with a message naming the duplicate package when the `schema` option was built by a TypeBox other than
 * the @sinclair/typebox that fastify-viewsets reads (its peer dependency).
 *
 * @example
 * ```ts
 * checkTypeBoxCopy(options.schema) // throws FST_VIEWSET_INVALID_OPTION for a `typebox` 1.x schema
 * ```
 */
export function checkTypeBoxCopy (schema: Record<string, unknown>): void {
  const other = otherTypeBox(schema)
  if (other === undefined) return
  invalidOption(
    'schema',
    `this schema was built by ${other}, another TypeBox than the @sinclair/typebox 0.34 that fastify-viewsets ` +
      "reads (a peer dependency): build it with `import { Type } from '@sinclair/typebox'` and keep one copy " +
      'installed (`npm ls @sinclair/typebox`, then `npm dedupe`, or an `overrides` entry in package.json)'
  )
}
