import fastJson from 'fast-json-stringify';
import { LruCache } from '../execution/lru-cache.js';
// The same function, typed on plain JSON Schema: its own types spell out each keyword, and ours are built by
// derive.ts from a TypeBox object schema; the serializer it returns writes any value.
const compile = fastJson; // plain JSON Schema in, any value out
/**
 * Compiles a fast-json-stringify serializer from plain JSON Schema, `$ref`s resolved in `externals`
 * (keyed by `$id`). The one place that meets fast-json-stringify's types.
 *
 * @example
 * ```ts
 * compileSerializer({ type: 'array', items: { $ref: 'Items#' } }, { Items: entity })([{ id: 1 }])
 * ```
 */
export function compileSerializer(schema, externals = {}) {
    return compile(schema, { schema: externals });
}
// Compiled route serializers by schema text: every route answers its errors with the same problem document,
// and a viewset writes its row by the same schema on several routes; each is compiled once, not per route
// (at startup, compiling was most of `app.ready()`). Bounded, as apps may be built again and again in one process.
const shared = new LruCache(1024);
// The JSON text of each external, written once per schema object (the problem document and a viewset's
// row are reached by every route of the viewset; their text makes part of each key).
const texts = new WeakMap();
function textOf(schema) {
    let text = texts.get(schema);
    if (text === undefined) {
        text = JSON.stringify(schema);
        texts.set(schema, text);
    }
    return text;
}
/** The ids of the `externals` that `source` (a schema's JSON) reaches through `$ref`, directly or through one another.
 * */
function reached(source, externals) {
    const found = [];
    let sources = [source];
    while (sources.length > 0) {
        const next = [];
        for (const [id, external] of Object.entries(externals)) {
            if (found.includes(id) || !sources.some((text) => text.includes(`"${id}#`) || text.includes(`"${id}"`)))
                continue;
            found.push(id);
            next.push(textOf(external));
        }
        sources = next;
    }
    return found;
}
function lazily(schema, externals) {
    let compiled;
    const compile = () => (compiled ??= compileSerializer(schema, externals));
    // Every answer passes here: once compiled, one call.
    return { compile, serialize: (value) => (compiled ?? compile())(value) };
}
/**
 * {@link compileSerializer} for the schemas of routes, shared by every route and viewset that writes by the
 * same schema (the same JSON, with the same `externals` it reaches). Not for schemas built per request
 * (`?fields=`), which have a cache of their own. Compiled on first use: a compilation took 1.3 ms of startup,
 * for every status of every route, most of which (a 412, a 503) are seldom written. `'now'` compiles it at once,
 * so that a schema fast-json-stringify cannot write (a `$ref` it cannot resolve) fails at startup.
 *
 * @example
 * ```ts
 * sharedSerializer({ $ref: 'Problem#' }, { Problem: problem, Items: entity }) // compiled once, with Problem only
 * ```
 */
export function sharedSerializer(schema, externals = {}, when = 'on first use') {
    // A response's own annotations (its description, its documented headers) change nothing in the bytes
    // written: POST's 201 and GET's 200 write a row with one serializer.
    const { description: _description, headers: _headers, ...written } = schema;
    const source = JSON.stringify(written);
    const used = reached(source, externals);
    const key = [source, ...used.map((id) => `${id}\t${textOf(externals[id] ?? {})}`)].join('\n');
    let entry = shared.get(key);
    if (entry === undefined) {
        entry = lazily(written, Object.fromEntries(used.map((id) => [id, externals[id] ?? {}])));
        shared.set(key, entry);
    }
    return when === 'now' ? entry.compile() : entry.serialize;
}
//# sourceMappingURL=serializer.js.map