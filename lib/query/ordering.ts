import { sql } from 'kysely'
import type { SelectQueryBuilder } from 'kysely'
import type { Row } from '../dialect/dialect.js'
import { ViewsetErrors } from '../errors.js'
import type { JsonSchema } from '../schema/derive.js'
import type { ScalarField } from './field-types.js'
import { nameList } from './field-types.js'

/** One sort key. */
export interface OrderKey {
  readonly field: string
  readonly descending: boolean
  readonly nullable: boolean
}

/** A complete ordering: the keys asked for, then the primary key so that no two rows tie. */
export interface Ordering {
  /** Identifies the ORDER BY clause, for the statement cache. */
  readonly shape: string
  readonly keys: readonly OrderKey[]
}

/** `?order_by=`, planned from the `orderingFields` and `defaultOrder` options. */
export interface OrderingPlan {
  /** The `order_by` query parameter, or none when ordering is not offered. */
  readonly properties: Record<string, JsonSchema>
  /** The ordering when `order_by` is absent. */
  readonly defaultOrdering: Ordering
  /** True when the default ordering is the primary key alone (the precompiled page statement's order). */
  readonly byPrimaryKey: boolean
  /** The ordering of a request; an unknown field is a 400 that lists the allowed ones. */
  ordering (query: Record<string, unknown>): Ordering
}

type AnySelect = SelectQueryBuilder<Record<string, Row>, string, Row>

/**
 * Adds ORDER BY. Nulls sort as if larger than every value (last ascending, first descending) on every
 * dialect, as PostgreSQL does by default: SQLite and MySQL sort them first, so nullable keys get an
 * `is null` key in front.
 */
export function applyOrdering (query: AnySelect, ordering: Ordering): AnySelect {
  let ordered = query
  for (const { field, descending, nullable } of ordering.keys) {
    const direction = descending ? 'desc' : 'asc'
    if (nullable) ordered = ordered.orderBy(sql`${sql.ref(field)} is null`, direction)
    ordered = ordered.orderBy(sql.ref(field), direction)
  }
  return ordered
}

/**
 * Parses `name,-created_at` against the allowed fields and appends the primary key as the tie-breaker.
 * Returns a message instead when a key is not allowed.
 */
function parse (text: string, allowed: ReadonlyMap<string, ScalarField>, primaryKey: ScalarField): Ordering | string {
  const keys: OrderKey[] = []
  for (const part of text.split(',')) {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const field = allowed.get(name)
    if (field === undefined) return `"${part}"`
    if (keys.some((key) => key.field === name)) return `"${name}" (listed twice)`
    keys.push({ field: name, descending, nullable: field.nullable })
  }
  if (!keys.some((key) => key.field === primaryKey.name)) keys.push({ field: primaryKey.name, descending: false, nullable: false })
  return { shape: keys.map((key) => `${key.descending ? '-' : ''}${key.field}`).join(','), keys }
}

/**
 * Checks `orderingFields` and `defaultOrder` and plans `?order_by=`. `defaultOrder` may use any scalar
 * column (it is the developer's choice); `order_by` only the `orderingFields`.
 */
export function planOrdering (orderingFields: unknown, defaultOrder: unknown, fields: ReadonlyMap<string, ScalarField>, primaryKey: string): OrderingPlan {
  const key = fields.get(primaryKey)
  if (key === undefined) throw new ViewsetErrors.InvalidOption('primaryKey', `"${primaryKey}" must be a scalar column to order pages by`)
  const allowed = new Map<string, ScalarField>()
  if (orderingFields !== undefined) {
    if (!Array.isArray(orderingFields) || orderingFields.length === 0) throw new ViewsetErrors.InvalidOption('orderingFields', `expected a non-empty array of fields (${nameList(fields.keys())})`)
    for (const name of orderingFields as unknown[]) {
      const field = typeof name === 'string' ? fields.get(name) : undefined
      if (field === undefined) throw new ViewsetErrors.InvalidOption('orderingFields', `${JSON.stringify(name)} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`)
      if (allowed.has(field.name)) throw new ViewsetErrors.InvalidOption('orderingFields', `"${field.name}" is listed twice`)
      allowed.set(field.name, field)
    }
  }

  let defaultOrdering: Ordering = { shape: primaryKey, keys: [{ field: primaryKey, descending: false, nullable: false }] }
  if (defaultOrder !== undefined) {
    if (typeof defaultOrder !== 'string' || defaultOrder === '') throw new ViewsetErrors.InvalidOption('defaultOrder', 'expected a string such as "-created_at" or "name,-id"')
    const parsed = parse(defaultOrder, fields, key)
    if (typeof parsed === 'string') throw new ViewsetErrors.InvalidOption('defaultOrder', `${parsed} is not a sortable column of the schema; scalar columns: ${nameList(fields.keys())}`)
    defaultOrdering = parsed
  }
  const byPrimaryKey = defaultOrdering.shape === primaryKey
  const allowedList = nameList(allowed.keys())
  const properties: Record<string, JsonSchema> = allowed.size === 0
    ? {}
    : {
        order_by: {
          type: 'string',
          minLength: 1,
          description: `Comma-separated sort keys; a leading \`-\` sorts descending. Allowed fields: ${allowedList}. ` +
            `Default: ${defaultOrder === undefined ? primaryKey : String(defaultOrder)}. Ties are broken by ${primaryKey}.`,
          examples: [[...allowed.keys()].map((name, index) => index === 0 ? `-${name}` : name).join(',')],
        },
      }
  return {
    properties,
    defaultOrdering,
    byPrimaryKey,
    ordering (query) {
      const text = query.order_by
      if (typeof text !== 'string') return defaultOrdering
      const parsed = parse(text, allowed, key)
      if (typeof parsed === 'string') throw new ViewsetErrors.UnsupportedOrdering(parsed, allowedList)
      return parsed
    },
  }
}
