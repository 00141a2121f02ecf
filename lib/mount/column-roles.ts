import type { TObject } from '@sinclair/typebox'
import type { TableCatalog } from '../dialect/shared/catalog.js'
import { scalarField } from '../query/field-types.js'
import type { RelatedConfig, RulesFrom } from '../relations/config.js'
import type { JsonSchema } from '../schema/derive.js'

// What some columns of a viewset's table are to the data layer: the foreign keys whose writes check a relation's
// rules, and the date-times it converts.

/** The `rulesFrom` of each `selectRelated` relation declared over a foreign key, by column: the keys' rules. */
export function keyRules (
  config: RelatedConfig<unknown> | undefined,
  foreignKeys: TableCatalog['foreignKeys']
): Record<string, RulesFrom<unknown> | undefined> {
  const rules: Record<string, RulesFrom<unknown> | undefined> = {}
  for (const relation of Object.values(config?.selectRelated ?? {})) {
    const references = foreignKeys.some((key) => key.columns[0] === relation.foreignKey && key.table === relation.table)
    if (references && relation.rulesFrom !== undefined) rules[relation.foreignKey] = relation.rulesFrom
  }
  return rules
}

/** The columns whose schema field is a `date-time` (or a nullable one). */
export function dateTimes (schema: TObject, columns: readonly string[]): ReadonlySet<string> {
  const properties: Record<string, JsonSchema> = schema.properties
  return new Set(columns.filter((column) => {
    const property = properties[column]
    return property !== undefined && scalarField(column, property)?.schema.format === 'date-time'
  }))
}
