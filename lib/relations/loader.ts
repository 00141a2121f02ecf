import type { TObject } from '@sinclair/typebox'
import type { AnyDatabase, Row, ViewsetDialect } from '../dialect/dialect.js'
import type { RelatedConfig } from './config.js'

/** Loads the relation fields of a page of rows, with a fixed number of statements. */
export interface RelationLoader {
  /** The schema fields that are relations (never columns, never written). */
  readonly fields: ReadonlySet<string>
  /** The columns the parent rows must carry for the loader (foreign and referenced keys). */
  readonly parentColumns: readonly string[]
  /** Adds the relation fields to each row, in place. */
  load (db: AnyDatabase, rows: Row[]): Promise<void>
}

/** The relation config of a viewset: the option, else the one attached to the schema. */
export function relatedConfigOf (option: RelatedConfig<unknown> | undefined, schema: TObject): RelatedConfig<unknown> | undefined {
  return option ?? (schema as TObject & { relatedConfig?: RelatedConfig<unknown> }).relatedConfig
}

/** The field names a config declares. */
export function relationFields (config: RelatedConfig<unknown> | undefined): Set<string> {
  return new Set([...Object.keys(config?.selectRelated ?? {}), ...Object.keys(config?.prefetchRelated ?? {})])
}

/**
 * Checks a relation config against the catalog and the schema, and plans its loaders.
 * Returns `undefined` when there is nothing to load.
 */
export async function createRelationLoader (_db: AnyDatabase, _dialect: ViewsetDialect, config: RelatedConfig<unknown> | undefined, _schema: TObject, _table: string): Promise<RelationLoader | undefined> {
  if (config === undefined || relationFields(config).size === 0) return undefined
  throw new Error('relatedConfig is not implemented yet')
}
