import { invalidOption, ViewsetErrors } from '../errors.js';
import { BatchedQuery } from './batched-query.js';
import { BatchedRelationLoader } from './batched-loader.js';
import { attachedConfig, declaredRelations } from './declaration.js';
import { freeAlias, limitedQuery, orderedQuery } from './relation-queries.js';
import { RelationRuleSlot, RuledQuery } from './relation-rule.js';
import { parseOrdering } from '../query/ordering.js';
/** The relation config of a viewset: the option, else the one attached to the schema. */
export function relatedConfigOf(option, schema) {
    return option ?? attachedConfig(schema);
}
/** The field names a config declares. */
export function relationFields(config) {
    return new Set([...Object.keys(config?.selectRelated ?? {}), ...Object.keys(config?.prefetchRelated ?? {})]);
}
/** Nesting deeper than this is surely a mistake (such as a schema that attaches a config to itself). */
const maxDepth = 8;
/** The alias of the join table's source key in many-to-many rows: the column they are grouped by. */
const sourceAlias = 'viewset_source_key';
/** Reads each table's columns once per registration, and only for the tables the declaration names. */
class Catalog {
    #db;
    dialect;
    #tables = new Map();
    constructor(db, dialect) {
        this.#db = db;
        this.dialect = dialect;
    }
    /** The columns of `table`, with their nullability: what `orderBy` needs to sort NULLs alike everywhere. */
    async described(table) {
        let columns = this.#tables.get(table);
        if (columns === undefined) {
            columns = this.dialect.catalog.table(this.#db, table).then((described) => described?.columns ?? []);
            this.#tables.set(table, columns);
        }
        const list = await columns;
        if (list.length === 0)
            throw new ViewsetErrors.UnknownTable(table);
        return new Map(list.map((column) => [column.name, column]));
    }
    async columns(table) {
        return [...(await this.described(table)).keys()];
    }
}
/** The error of a name that is not a column of `table`, naming the option that holds it. */
function notAColumn(path, column, table, columns) {
    invalidOption(path, `"${column}" is not a column of table "${table}" (columns: ${columns.join(', ')})`);
}
/** Throws unless `column` is a column of `table`, naming the option that holds it. */
function checkColumn(path, column, table, columns) {
    return columns.includes(column) ? column : notAColumn(path, column, table, columns);
}
function unique(names) {
    return [...new Set(names)];
}
/** The children's order: as declared, then the target's key so that equal keys keep a stable order. */
function orderOf(relation, key, columns) {
    const parsed = parseOrdering(relation.orderBy ?? [], columns, key);
    if ('keys' in parsed)
        return parsed.keys;
    const path = `${relation.path}.orderBy`;
    if (parsed.reason === 'twice')
        invalidOption(path, `"${parsed.field}" is listed twice`);
    return notAColumn(path, parsed.field, relation.table, [...columns.keys()]);
}
/** `builder` restricted to the rows every condition admits (their values bound after the keys, in this order). */
function restricted(builder, conditions) {
    let ruled = builder;
    for (const condition of conditions)
        ruled = ruled.where(condition.where);
    return ruled;
}
/** How many values the conditions bind. */
function valuesOf(conditions) {
    let count = 0;
    for (const condition of conditions)
        count += condition.parameters.length;
    return count;
}
/** The rule of the relation's target, read as `t`: its `'GET'` rule for a to-one load, its `'LIST'` rule otherwise. */
function targetSlot(relation) {
    const method = relation.kind === 'many-to-one' ? 'GET' : 'LIST';
    return new RelationRuleSlot(relation.path, relation.table, 't', relation.rulesFrom, method);
}
/** Every statement reads the target as `t`: a key table's own columns (json_each has an `id`) stay apart. */
function qualified(columns) {
    return columns.map((column) => `t.${column}`);
}
/** How the relation of `site` meets its parent, for filters, search and ordering through it. */
function linkOf(site, parentColumn, targetColumn, through) {
    const { relation } = site;
    return {
        field: relation.field,
        kind: relation.kind,
        table: relation.table,
        parentColumn,
        targetColumn,
        through,
        target: relation.target,
        columns: site.fields,
        links: site.nested?.links ?? new Map(),
    };
}
function planManyToOne(site) {
    const { db, dialect, relation, parentTable, parentColumns, targetColumns, fields, extra, nested } = site;
    const { path, table } = relation;
    // declared for this kind
    const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', parentTable, parentColumns);
    const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns);
    const columns = unique([...fields, references, ...extra]);
    const query = new RuledQuery([targetSlot(relation)], (conditions) => new BatchedQuery(db, dialect, (keyed) => restricted(keyed(table, 't', references), conditions).select(qualified(columns)), undefined, valuesOf(conditions)));
    return {
        field: relation.field,
        kind: relation.kind,
        link: linkOf(site, foreignKey, references),
        parentKey: foreignKey,
        childKey: references,
        query,
        limit: undefined,
        nested,
        keyOf: dialect.values.keyOf,
    };
}
function planOneToMany(site) {
    const { db, dialect, relation, parentTable, parentKey, parentColumns, targetColumns, fields, extra, nested } = site;
    const { path, table, limit } = relation;
    const references = checkColumn(`${path}.references`, relation.references ?? parentKey, parentTable, parentColumns);
    // declared for this kind
    const foreignKey = checkColumn(`${path}.foreignKey`, relation.foreignKey ?? '', table, targetColumns);
    const order = orderOf(relation, targetColumns.includes('id') ? 'id' : undefined, site.described);
    const columns = unique([...fields, foreignKey, ...extra]);
    const query = new RuledQuery([targetSlot(relation)], (conditions) => {
        const filtered = (keyed) => restricted(keyed(table, 't', foreignKey), conditions).select(qualified(columns));
        const extra = valuesOf(conditions);
        return limit === undefined
            ? orderedQuery(db, dialect, filtered, order, extra)
            : limitedQuery(db, dialect, filtered, columns, `t.${foreignKey}`, order, limit, extra);
    });
    return {
        field: relation.field,
        kind: relation.kind,
        link: linkOf(site, references, foreignKey),
        parentKey: references,
        childKey: foreignKey,
        query,
        limit,
        nested,
        keyOf: dialect.values.keyOf,
    };
}
async function planManyToMany(site) {
    const { db, dialect, relation, parentTable, parentKey, parentColumns, targetColumns, fields, extra, nested } = site;
    const { path, table, through, limit } = relation;
    // declaredRelations sets it for this kind
    if (through === undefined)
        throw new Error(`${path}: a many-to-many relation without through`);
    const throughColumns = await site.catalog.columns(through.table);
    const source = checkColumn(`${path}.through.sourceKey`, through.sourceKey, through.table, throughColumns);
    const target = checkColumn(`${path}.through.targetKey`, through.targetKey, through.table, throughColumns);
    const references = checkColumn(`${path}.references`, relation.references ?? 'id', table, targetColumns);
    checkColumn(path, parentKey, parentTable, parentColumns);
    const order = orderOf(relation, references, site.described);
    const columns = unique([...fields, ...extra]);
    const alias = freeAlias(sourceAlias, columns);
    const selection = [...qualified(columns), `j.${source} as ${alias}`];
    // The aliases keep schema-qualified names (`shop.tags`) and a self-join apart.
    // The targets take their table's rule, and the join table its own when it has one.
    const slots = [targetSlot(relation), new RelationRuleSlot(`${path}.through`, through.table, 'j', undefined, 'LIST')];
    const query = new RuledQuery(slots, (conditions) => {
        const joined = (keyed) => restricted(keyed(through.table, 'j', source).innerJoin(`${table} as t`, `t.${references}`, `j.${target}`), conditions).select(selection);
        const extra = valuesOf(conditions);
        return limit === undefined
            ? orderedQuery(db, dialect, joined, order, extra)
            : limitedQuery(db, dialect, joined, [...columns, alias], `j.${source}`, order, limit, extra);
    });
    return {
        field: relation.field,
        kind: relation.kind,
        link: linkOf(site, parentKey, references, { table: through.table, sourceKey: source, targetKey: target }),
        parentKey,
        childKey: alias,
        query,
        limit,
        nested,
        keyOf: dialect.values.keyOf,
    };
}
async function planRelation(db, relation, parentTable, parentKey, catalog, depth) {
    const { path, table, kind } = relation;
    const [parentColumns, described] = await Promise.all([catalog.columns(parentTable), catalog.described(table)]);
    const targetColumns = [...described.keys()];
    // The key of one related row, for the next level's many-to-many and one-to-many relations.
    const targetKey = kind === 'one-to-many' ? 'id' : (relation.references ?? 'id');
    const nestedPath = `${path}.relatedConfig`;
    const { relatedConfig, target } = relation;
    const nested = await plan(db, relatedConfig, target, table, targetKey, nestedPath, catalog, depth + 1);
    const nestedFields = nested?.fields ?? new Set();
    const fields = Object.keys(relation.target.properties).filter((field) => !nestedFields.has(field));
    for (const field of fields) {
        if (!targetColumns.includes(field))
            throw new ViewsetErrors.UnknownColumn(field, table, targetColumns.join(', '));
    }
    const extra = nested?.parentColumns ?? [];
    const { dialect } = catalog;
    const site = {
        db,
        dialect,
        relation,
        catalog,
        parentTable,
        parentKey,
        parentColumns,
        described,
        targetColumns,
        fields,
        extra,
        nested,
    };
    switch (kind) {
        case 'many-to-one': return planManyToOne(site);
        case 'one-to-many': return planOneToMany(site);
        case 'many-to-many': return await planManyToMany(site);
    }
}
async function plan(db, config, schema, table, primaryKey, path, catalog, depth) {
    if (config === undefined)
        return undefined;
    if (depth > maxDepth) {
        invalidOption(path, `relations nest more than ${maxDepth} levels deep; is a schema's relatedConfig pointing back at itself?`);
    }
    const declared = declaredRelations(config, schema, path);
    if (declared.length === 0)
        return undefined;
    const planned = [];
    for (const relation of declared)
        planned.push(await planRelation(db, relation, table, primaryKey, catalog, depth));
    return new BatchedRelationLoader(planned);
}
/**
 * Checks a relation config against the catalog and the schema, and plans its loaders: one batched
 * statement per relation per level, compiled here, never per request. Returns `undefined` when there
 * is nothing to load. `primaryKey` is the parent's key that one-to-many and many-to-many relations
 * reference by default.
 *
 * @example
 * ```ts
 * const selectRelated = { author: { table: 'authors', foreignKey: 'author_id' } }
 * const loader = await createRelationLoader(db, dialect, { selectRelated }, Book, 'books')
 * await loader?.load(db, books)   // one `select ... from authors where id in (...)` for the whole page
 * ```
 */
export async function createRelationLoader(db, dialect, config, schema, table, primaryKey = 'id') {
    return await plan(db, config, schema, table, primaryKey, 'relatedConfig', new Catalog(db, dialect), 0);
}
//# sourceMappingURL=loader.js.map