import { hash } from 'node:crypto';
// Entity tags and the conditional request headers (RFC 9110 §8.8.3, §13.1). The data layer checks
// If-Match with the write (resource.ts); this file only reads headers and makes tags.
/** The tag of a row versioned by a column: its value, quoted (`"3"`). */
export function versionTag(version) {
    return `"${String(version)}"`;
}
/** The tag of a row without a version column: a hash of its full representation, as GET sends it. */
export function representationTag(body) {
    // SHA-1 as a fingerprint, not a signature: the tag only has to change when the bytes do.
    return `"${hash('sha1', body, 'base64url')}"`;
}
/** `*`, or the entity-tags of an If-Match or If-None-Match header, `W/` kept; `undefined` when absent. */
export function parseTags(header) {
    if (header === undefined)
        return undefined;
    const text = Array.isArray(header) ? header.join(', ') : header;
    if (text.trim() === '*')
        return '*';
    return text.match(/(?:W\/)?"[^"]*"/g) ?? [];
}
/** If-None-Match: weak comparison, so `W/"x"` matches `"x"`. */
export function noneMatch(header, tag) {
    const tags = parseTags(header);
    if (tags === undefined)
        return false;
    return tags === '*' || tags.some((candidate) => candidate.replace(/^W\//, '') === tag);
}
/**
 * What a PUT, PATCH or DELETE asks of the row before it is written: the tags of `If-Match`, or, with
 * `requireIfMatch` and no `If-Match`, a 428 (after the 404 of a missing row). `undefined`: no condition.
 */
export function preconditionOf(ifMatch, requireIfMatch) {
    const tags = parseTags(ifMatch);
    if (tags !== undefined)
        return { kind: 'match', tags };
    return requireIfMatch ? { kind: 'required' } : undefined;
}
//# sourceMappingURL=conditional-requests.js.map