/**
 * A driver's method as the library calls it through a wrapper: up to three arguments forwarded as they came
 * (pg's `query` takes at most three, mysql2's too), its answer handed back untouched. Named parameters, not
 * rest arguments: a wrapped `query` runs for every statement.
 */
export type DriverMethod = (first?: unknown, second?: unknown, third?: unknown) => unknown

/**
 * Replaces the method `key` of a driver's object (a pg client or pool, a mysql2 connection) with
 * `wrap(original)`, `original` being the method as it was, bound to the object. The drivers type these
 * methods as overload sets (pg's `query` has eight forms) that a replacement cannot restate: the wrapper takes
 * and forwards them untyped, reading the arguments it acts on with guards, and is set as the object's own
 * property, as the method it replaces.
 *
 * @example
 * ```ts
 * replaceMethod(client, 'query', (query) => (config, values, callback) => query(config, values, callback))
 * ```
 */
export function replaceMethod (target: object, key: string, wrap: (original: DriverMethod) => DriverMethod): void {
  const method: unknown = Reflect.get(target, key)
  if (typeof method !== 'function') throw new TypeError(`fastify-viewsets: the driver's object has no ${key}()`)
  // The driver's own function, called with the arguments its callers gave: what DriverMethod says.
  const original: DriverMethod = method.bind(target)
  Reflect.set(target, key, wrap(original))
}
