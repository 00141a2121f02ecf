/** A plain object (not null, not an array): what a JSON Schema or an options object is. */
export function isRecord(value) {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}
/** An array, its elements still unknown (`Array.isArray` alone would type them `any`). */
export function isList(value) {
    return Array.isArray(value);
}
/**
 * An object schema with `properties` (`Type.Object`, or its plain JSON Schema copy): the one test of the
 * library, used to find the object inside a relation field (`Author`, `Union([Author, Null])`, `Array(Tag)`).
 * TypeBox's own guards read its symbol keys, which plain copies no longer have.
 *
 * @example
 * ```ts
 * isObjectSchema(Type.Object({ id: Type.Integer() })) // true
 * isObjectSchema(Type.Record(Type.String(), Type.Number())) // false: no properties
 * ```
 */
export function isObjectSchema(schema) {
    return isRecord(schema) && schema.type === 'object' && isRecord(schema.properties);
}
//# sourceMappingURL=object-schema.js.map