import { sql } from 'kysely';
import { invalidOption } from '../errors.js';
import { nameList, scalarField } from './field-types.js';
/** The most relations a dotted path may go through (`author.publisher.name`): each one is a nested subquery. */
export const maxHops = 2;
/** The alias of the related table `depth` hops away (1 is the parent's own relation). */
function aliasAt(depth) {
    return `viewset_r${depth}`;
}
/** The column of the last relation of a path, as the innermost subquery names it. */
export function relatedColumn(path) {
    return `${aliasAt(path.hops.length)}.${path.field.name}`;
}
/**
 * Reads a dotted path of `option` (filterFields, orderingFields, searchFields) through the configured
 * relations. `toOne`: only many-to-one (`selectRelated`) relations, as ordering and search need one value
 * per parent. A path that goes through something else than a relation, too many relations, or ends on
 * anything but a scalar field of the related schema fails with `FST_VIEWSET_INVALID_OPTION` naming it.
 */
export function resolvePath(option, path, root, toOne) {
    const parts = path.split('.');
    const name = parts.pop() ?? '';
    if (parts.length > maxHops) {
        invalidOption(option, `"${path}" goes through ${parts.length} relations; at most ${maxHops} are allowed`);
    }
    const hops = [];
    let links = root.links;
    for (const part of parts) {
        const link = links.get(part);
        if (link === undefined) {
            invalidOption(option, `"${path}": "${part}" is not a configured relation` +
                (hops.length === 0 ? '' : ` of "${hops.map((hop) => hop.field).join('.')}"`) +
                ` (relations: ${nameList(links.keys())})`);
        }
        if (toOne && link.kind !== 'many-to-one') {
            invalidOption(option, `"${path}": "${part}" is a prefetchRelated (to-many) relation; only selectRelated paths are allowed here`);
        }
        hops.push(link);
        links = link.links;
    }
    const last = hops[hops.length - 1];
    if (last === undefined)
        return invalidOption(option, `"${path}" names no relation`);
    const properties = last.target.properties;
    const property = last.columns.includes(name) && Object.hasOwn(properties, name) ? properties[name] : undefined;
    const field = property === undefined ? undefined : scalarField(name, property);
    if (field === undefined) {
        const scalars = last.columns.filter((column) => {
            const schema = properties[column];
            return schema !== undefined && scalarField(column, schema) !== undefined;
        });
        invalidOption(option, `"${path}": "${name}" is not a scalar field of the schema of "${last.field}" (fields: ${nameList(scalars)})`);
    }
    return { path, hops, field };
}
/** `a = b` of two checked column references. */
function equal(left, right) {
    return sql `${sql.ref(left)} = ${sql.ref(right)}`;
}
/**
 * `EXISTS` (a related row of `link`, reached from `outer`, for which every term holds): "has at least one",
 * which never repeats a parent however many children match. `depth` numbers the aliases of nested relations.
 */
export function relatedExists(eb, link, outer, depth, terms) {
    const alias = aliasAt(depth);
    const { through } = link;
    let query;
    if (through === undefined) {
        // many-to-one and one-to-many alike: the related row's column equals the parent's.
        query = eb
            .selectFrom(`${link.table} as ${alias}`)
            .select(sql.lit(1).as('one'))
            .where(equal(`${alias}.${link.targetColumn}`, `${outer}.${link.parentColumn}`));
    }
    else {
        const join = `viewset_j${depth}`;
        query = eb
            .selectFrom(`${through.table} as ${join}`)
            .innerJoin(`${link.table} as ${alias}`, (on) => on.on(equal(`${alias}.${link.targetColumn}`, `${join}.${through.targetKey}`)))
            .select(sql.lit(1).as('one'))
            .where(equal(`${join}.${through.sourceKey}`, `${outer}.${link.parentColumn}`));
    }
    return eb.exists(terms.length === 0 ? query : query.where(eb.and([...terms])));
}
/** `EXISTS` through every relation of `path`, the innermost one holding `term` (of its column, {@link relatedColumn}).
 * */
export function existsThrough(eb, path, table, term) {
    let expression = term;
    for (let depth = path.hops.length; depth >= 1; depth--) {
        const link = path.hops[depth - 1];
        if (link === undefined)
            continue;
        expression = relatedExists(eb, link, depth === 1 ? table : aliasAt(depth - 1), depth, [expression]);
    }
    return expression;
}
/**
 * The value of a many-to-one path for each parent row: a correlated scalar subquery, NULL when a relation
 * on the way is NULL. It sorts like a nullable column of the parent, and a cursor can read it back.
 */
export function relatedValue(path, table) {
    let value = sql.ref(relatedColumn(path));
    for (let depth = path.hops.length; depth >= 1; depth--) {
        const link = path.hops[depth - 1];
        if (link === undefined)
            continue;
        const alias = aliasAt(depth);
        const outer = depth === 1 ? table : aliasAt(depth - 1);
        const match = equal(`${alias}.${link.targetColumn}`, `${outer}.${link.parentColumn}`);
        value = sql `(select ${value} from ${sql.table(link.table)} as ${sql.id(alias)} where ${match})`;
    }
    return value;
}
/**
 * Gathers relation filters into one `EXISTS` per relation path, so that conditions on the same to-many
 * path hold for the same child (`tags.name__contains=fi&tags.name__ne=sci-fi`: one tag matching both),
 * nested for a second hop. Each returned condition binds its leaves' values, then its nested groups', in
 * the order the SQL names them.
 */
export function groupRelated(filters, table) {
    const root = new Map();
    for (const { path, condition } of filters) {
        let groups = root;
        let group;
        for (const link of path.hops) {
            group = groups.get(link.field);
            if (group === undefined) {
                group = { link, leaves: [], children: new Map() };
                groups.set(link.field, group);
            }
            groups = group.children;
        }
        group?.leaves.push(condition);
    }
    const build = (group, outer, depth) => {
        const inner = [
            ...group.leaves,
            ...[...group.children.values()].map((child) => build(child, aliasAt(depth), depth + 1)),
        ];
        return {
            shape: `${group.link.field}(${inner.map((condition) => condition.shape).join('&')})`,
            parameters: inner.flatMap((condition) => condition.parameters),
            expression: (eb) => relatedExists(eb, group.link, outer, depth, inner.map((condition) => condition.expression(eb))),
        };
    };
    return [...root.values()].map((group) => build(group, table, 1));
}
//# sourceMappingURL=related-paths.js.map