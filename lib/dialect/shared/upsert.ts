import type { Expression, ExpressionBuilder, SqlBool } from 'kysely'
import type { Row } from '../../sql.js'

// What an upsert shares across databases: the condition that finds the stored rows its elements conflict with (read
// to decide each element's branch: data/upsert-branches.ts) and that names the element of a bulk write's fault.

/** `WHERE` the rows whose `columns` hold the values of one of `rows`: what an upsert of them conflicts with. */
export function keyIn (columns: readonly string[], rows: readonly Row[]) {
  return (eb: ExpressionBuilder<Record<string, Row>, string>): Expression<SqlBool> => {
    const [only] = columns
    if (columns.length === 1 && only !== undefined) {
      return eb(
        eb.ref(only),
        'in',
        rows.map((row) => row[only])
      )
    }
    return eb.or(rows.map((row) => eb.and(columns.map((column) => eb(eb.ref(column), '=', row[column])))))
  }
}
