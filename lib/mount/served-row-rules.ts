import type { ParentBinding } from '../http/parent-binding.js'
import type { DefaultHandlerContext } from '../http/default-handler-context.js'
import { serving } from '../execution/served-request.js'
import { inWrite } from '../execution/write-transaction.js'
import type { AfterWriteMethod, RowChange, RowContext, WriteMethod } from '../options.js'
import type { AnyDatabase, Row } from '../sql.js'
import type { RelationRule } from '../relations/config.js'
import type { RegisteredViewset } from './registry.js'

// The row rules and write hooks a mounted viewset's default handlers call, wrapped once at mounting.

/** What a viewset declares of its rules and hooks (mount-viewset.ts's ViewsetDeclaration, in part). */
interface DeclaredRules {
  readonly rowRules: Pick<DefaultHandlerContext, 'scopeOf' | 'beforeWrite' | 'notFound'> &
    { readonly afterWrite: NonNullable<DefaultHandlerContext['afterWrite']> }
  readonly overridden: ReadonlySet<string>
  readonly db: AnyDatabase
  readonly columns: readonly string[]
}

/**
 * The row rules, with `beforeWrite` and `afterWrite` run serving their request (the helpers they call apply that
 * request's rule; no `afterWrite` unless the viewset has one, so that its writes run no statement for it), and under
 * a nested prefix the parent's terms ANDed into the rule and its values into every write.
 */
export function servedRowRules (
  { rowRules, overridden, db, columns }: DeclaredRules,
  parent: ParentBinding | undefined
): Pick<DefaultHandlerContext, 'scopeOf' | 'beforeWrite' | 'notFound' | 'afterWrite' | 'beforeWriteInTransaction'> {
  const { afterWrite } = rowRules
  // The hook sees the schema's columns only: the loader's extra keys are selected, never served.
  const shown = (row: Row | null) => row && Object.fromEntries(columns.map((column) => [column, row[column]]))
  const hooked = {
    ...rowRules,
    afterWrite: overridden.has('afterWrite')
      ? async (trx: AnyDatabase, context: RowContext<AfterWriteMethod>, { before, after }: RowChange<Row>) => {
        await serving(context.request, () => afterWrite(trx, context, { before: shown(before), after: shown(after) }))
      }
      : undefined,
  }
  // A beforeWrite of the viewset's runs in the write's transaction, and the helpers it calls read through it.
  const served = overridden.has('beforeWrite')
    ? {
        ...hooked,
        beforeWrite: (values: Row, context: RowContext<WriteMethod>, trx: AnyDatabase) =>
          serving(context.request, () => inWrite(db, trx, () => rowRules.beforeWrite(values, context, trx))),
        beforeWriteInTransaction: true,
      }
    : hooked
  if (parent === undefined) return served
  return {
    ...served,
    scopeOf: parent.scoped(db, served.scopeOf),
    beforeWrite: (values, context, trx) =>
      served.beforeWrite({ ...values, ...parent.values(context.request) }, context, trx),
  }
}

/**
 * The viewset's row rule as other viewsets' relations apply it, or `undefined` without a `scope`: its `scope`
 * method, told apart from another viewset's by the `scope` option it calls, else by its class's method.
 */
export function ruleOf ({ viewset, options, overridden }: {
  readonly viewset: object
  readonly options: { readonly scope?: unknown }
  readonly overridden: ReadonlySet<string>
}): RegisteredViewset['rule'] {
  if (!overridden.has('scope') || !hasScope(viewset)) return undefined
  const { scope } = options
  // The option (either form) tells two viewsets' rules apart; without it, the class's method does.
  const given = typeof scope === 'function' || (typeof scope === 'object' && scope !== null) ? scope : undefined
  return { source: viewset, identity: given ?? viewset.scope }
}

/** Whether a viewset has the `scope` method a relation calls (every `Viewset` does). */
function hasScope (viewset: object): viewset is RelationRule<unknown> {
  return 'scope' in viewset && typeof viewset.scope === 'function'
}
