import { faultProblem } from '../errors.js'
import type { DatabaseFault } from '../errors.js'

/**
 * The problem a handler's error answers, as the viewset's problem handler (http/problem-handler.ts) decides it.
 *
 * @example
 * ```ts
 * handlerChannel.error.subscribe((context) => { if (context.problem?.fault === 'timeout') slowQueries++ })
 * ```
 */
export interface AnsweredProblem {
  /** Its `code`: `FST_VIEWSET_CONFLICT`, ... */
  readonly code: string
  /** Its HTTP status: 409, 503, ... */
  readonly status: number
  /** The database fault's kind (`unique`, `foreign-key`, `unavailable`, ...) when the database raised it. */
  readonly fault: DatabaseFault['kind'] | undefined
}

/**
 * What an error thrown by a viewset's handler answers: its own code when it is one of ours or a 4xx with a code,
 * the problem of the database fault it is, else `FST_VIEWSET_INTERNAL`. Errors of validation and of the body's
 * parsing come before the handler, never here.
 *
 * @example
 * ```ts
 * answeredProblem(uniqueViolation, dialect.classify, 'POST') // { code: 'FST_VIEWSET_CONFLICT', status: 409, ... }
 * ```
 */
export function answeredProblem (
  error: unknown,
  classify: (error: unknown) => DatabaseFault | undefined,
  method: string
): AnsweredProblem {
  // Fastify's errors and the drivers' carry a code and a status; anything else is a programming error.
  const fields: object = typeof error === 'object' && error !== null ? error : {}
  const code = 'code' in fields ? fields.code : undefined
  const statusCode = 'statusCode' in fields ? fields.statusCode : undefined
  const status = typeof statusCode === 'number' ? statusCode : 500
  if (typeof code === 'string' && code.startsWith('FST_VIEWSET_')) return { code, status, fault: undefined }
  const fault = classify(error)
  if (fault !== undefined) {
    const answered = faultProblem(fault, method)
    return { code: answered.code, status: answered.statusCode ?? 500, fault: fault.kind }
  }
  if (typeof code === 'string' && status >= 400 && status < 500) return { code, status, fault: undefined }
  return { code: 'FST_VIEWSET_INTERNAL', status: 500, fault: undefined }
}
