// execution/: how the library's statements run, and the synchronous-answer contract every layer above keeps.
// Each file of this folder points here.
//
// 1. What is promised. A function of the read path (route → default handler → table gateway → statement cache →
//    runCompiled) answers `Eventually<T>`: the value itself, or a promise of it. Its caller hands the answer on as
//    it came (`andThen` below), never wrapping a value in a promise, so that a value reaches the route, which
//    Fastify sends at once: each promise and async frame between the statement and the reply is a microtask and
//    more code touched per request.
// 2. When a value comes back synchronously. Only a statement compiled ahead of time (the data layer's, by
//    `runCompiled` in prepared-kysely.ts) on a database that createDatabase opened or withPreparedStatements
//    adopted, whose shortcut took it: on SQLite, better-sqlite3 answers before any promise could (a SELECT known to
//    answer one row, one-row.ts, is read with `.get()`). Everything else answers a promise: PostgreSQL, MySQL, a
//    transaction, a Kysely builder, an adopted instance that logs or has plugins, an overridden handler, BULK.
//    Kysely's own `executeQuery` always answers a promise, on every instance.
// 3. Failures. A function that answers `Eventually<T>` may also throw synchronously, where it would otherwise
//    reject: its callers are async functions or Fastify handlers, which catch both. `andThen` keeps that: a throw
//    of `next` on a value is thrown at once.
// 4. Cancellation (cancellation.ts). A request runs inside its cancellation context (runWithCancellation), which a
//    query reads when it starts: a synchronous answer ran entirely inside it, and needs nothing carried. Across an
//    await the generated path resumes in its context by hand (withCancellation); user code's awaits carry it on V8's
//    promise hooks, installed only once both a database can cancel and a viewset runs user code.
// 5. Bounds. Whatever this folder keeps per shape of query or per connection lives in an LruCache (lru-cache.ts).
// A file added to this folder says here which of these it keeps, or changes.

/** A value now, or a promise of it: what the read path answers (see above). */
export type Eventually<T> = T | Promise<T>

/**
 * `next` of a value: at once when the value is there, else once the promise settles. A throw from `next`
 * (or from what produced `value`) is thrown at once in the first case: callers are functions whose
 * callers catch both (an async function, a Fastify handler).
 *
 * @example
 * ```ts
 * const row = andThen(statements.execute(db, shape, [id], build), firstRow)
 * ```
 */
export function andThen<T, U> (value: Eventually<T>, next: (value: T) => Eventually<U>): Eventually<U> {
  return value instanceof Promise ? value.then(next) : next(value)
}

/**
 * What `work` answers, or, where it throws or its promise rejects, what `fault` makes of the error (its answer, or
 * what it throws): at once when `work` answers at once.
 *
 * @example
 * ```ts
 * const row = onFault(() => insert(trx, child), (error) => { throw pointed(error, '/books/2') })
 * ```
 */
export function onFault<T, U> (work: () => Eventually<T>, fault: (error: unknown) => Eventually<U>): Eventually<T | U> {
  let answer: Eventually<T>
  try {
    answer = work()
  } catch (error) {
    return fault(error)
  }
  return answer instanceof Promise ? answer.catch(fault) : answer
}

/**
 * `each` of the items one after the other, each started once the one before it answered: their answers in order, at
 * once when every one answered at once. A throw of `each` is thrown at once as {@link andThen}'s.
 *
 * @example
 * ```ts
 * const rows = inOrder(children, (child) => insert(trx, child))
 * ```
 */
export function inOrder<T, U> (items: readonly T[], each: (item: T, index: number) => Eventually<U>): Eventually<U[]> {
  const answers: U[] = []
  const entries = items.entries()
  const rest = (): Eventually<U[]> => {
    for (let entry = entries.next(); entry.done !== true; entry = entries.next()) {
      const answer = each(entry.value[1], entry.value[0])
      if (answer instanceof Promise) {
        return answer.then((value) => {
          answers.push(value)
          return rest()
        })
      }
      answers.push(answer)
    }
    return answers
  }
  return rest()
}
