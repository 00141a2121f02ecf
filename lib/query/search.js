import { containsPattern } from '../sql.js';
import { invalidOption } from '../errors.js';
import { isList } from '../schema/object-schema.js';
import { checkedTerm, queryParameterError } from './condition.js';
import { nameList } from './field-types.js';
import { noNulPattern } from '../schema/list-patterns.js';
import { existsThrough, relatedColumn, resolvePath } from './related-paths.js';
/** Characters as Ajv's `maxLength` counts them: code points, a lone surrogate counting as one. */
function codePoints(text) {
    let count = 0;
    for (let i = 0; i < text.length; i++, count++) {
        const code = text.charCodeAt(i);
        if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00)
            i++;
    }
    return count;
}
/**
 * A substring term of at most `maxLength` characters (`maxSearchLength`), as a 400 naming `parameter`
 * otherwise. The query-string schema already says so; this holds when a subclass's `listQuery` redefines
 * the parameter without the bound.
 */
export function boundedTerm(parameter, term, maxLength) {
    // UTF-16 units are never fewer than code points: most terms need no count.
    if (term.length > maxLength && codePoints(term) > maxLength) {
        throw queryParameterError(parameter, `must NOT have more than ${maxLength} characters`);
    }
    return checkedTerm(parameter, term);
}
/**
 * Checks `searchFields` (string columns of the schema) and plans `?search=`. The term is at most
 * `maxLength` characters: the schema says so, so OpenAPI documents it and validation refuses a longer one
 * (Ajv counts code points, so `é` or `🍞` count as one) with a 400 that names `search`.
 */
export function planSearch(option, fields, dialect, maxLength, related) {
    if (option === undefined)
        return { properties: {}, condition: () => undefined };
    const { names, paths } = searchedFields(option, fields, related);
    const properties = {
        search: {
            type: 'string',
            maxLength,
            // A NUL is refused (checkedTerm): the document says so.
            pattern: noNulPattern,
            description: `Case-insensitive substring match on ${names.join(' or ')}, at most ${maxLength} characters. ` +
                '`%`, `_` and `\\` match themselves.',
            examples: ['bread'],
        },
    };
    return {
        properties,
        condition(query) {
            const term = query.search;
            if (typeof term !== 'string' || term === '')
                return undefined;
            const pattern = containsPattern(boundedTerm('search', term, maxLength));
            return {
                shape: 'search',
                parameters: names.map(() => pattern),
                // A parent whose relation is NULL has no related row: its own fields are still searched.
                expression: (eb) => eb.or(names.map((name) => {
                    const path = paths.get(name);
                    return path === undefined || related === undefined
                        ? dialect.syntax.ilike(eb.ref(name), pattern)
                        : existsThrough(eb, path, related.table, dialect.syntax.ilike(eb.ref(relatedColumn(path)), pattern));
                })),
            };
        },
    };
}
/** Checks `searchFields`: string columns, or relation paths to a string field, each once. */
function searchedFields(option, fields, related) {
    const strings = [...fields.values()].filter((field) => field.type === 'string').map((field) => field.name);
    if (!isList(option) || option.length === 0) {
        invalidOption('searchFields', `expected a non-empty array of string fields (${nameList(strings)})`);
    }
    const names = [];
    // A relation path (`author.name`) searches the related row: many-to-one only, one value per row.
    const paths = new Map();
    for (const name of option) {
        const path = typeof name === 'string' && name.includes('.') && related !== undefined
            ? resolvePath('searchFields', name, related, true)
            : undefined;
        if (path !== undefined && path.field.type !== 'string') {
            invalidOption('searchFields', `"${name}" is not a string field of the schema of "${path.hops.map((hop) => hop.field).join('.')}"`);
        }
        if (typeof name !== 'string' || (path === undefined && !strings.includes(name))) {
            invalidOption('searchFields', `${JSON.stringify(name)} is not a string column of the schema; searchable fields: ${nameList(strings)}`);
        }
        if (names.includes(name))
            invalidOption('searchFields', `"${name}" is listed twice`);
        names.push(name);
        if (path !== undefined)
            paths.set(name, path);
    }
    return { names, paths };
}
//# sourceMappingURL=search.js.map