/**
 * RFC 3339 date-times as Ajv's `date-time` format takes them: `T`, `t` or a space between date and time, an
 * optional fraction, and `Z`, `z` or an offset up to ±23:59 (with or without its colon or minutes).
 */
const rfc3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d)(?::?(\d\d))?)$/;
function instant(text) {
    const match = rfc3339.exec(text);
    if (match === null)
        return undefined;
    const [, year, month, day, hour, minute, second, fraction = '', zulu, sign, offsetHours, offsetMinutes = '0'] = match;
    const date = new Date(0);
    // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
    date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
    // A leap second (23:59:60) rolls over to the next minute, as PostgreSQL reads it.
    date.setUTCHours(Number(hour), Number(minute), Number(second), 0);
    const offset = zulu === undefined ? (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) : 0;
    const seconds = date.getTime() - offset * 60_000;
    return Number.isNaN(seconds) ? undefined : { seconds, fraction, offsetMinutes: offset };
}
/**
 * The canonical UTC form SQLite stores a `date-time` field in, `YYYY-MM-DDTHH:MM:SS.sssZ` (JavaScript's
 * `toISOString()`, the form filter values are compared in), so that text comparison orders instants: a fraction
 * finer than milliseconds is cut to them. `undefined` when the text is not an RFC 3339 date-time.
 *
 * @example
 * ```ts
 * canonicalDateTime('2024-01-01T01:30:00.5+01:30') // '2024-01-01T00:00:00.500Z'
 * ```
 */
export function canonicalDateTime(text) {
    const read = instant(text);
    if (read === undefined)
        return undefined;
    return new Date(read.seconds + Number(read.fraction.slice(0, 3).padEnd(3, '0'))).toISOString();
}
/**
 * The same instant in UTC, the fraction kept to all its digits (`2024-01-01T00:00:00.123456Z`), when the offset
 * is one PostgreSQL cannot read (beyond ±15:59, where RFC 3339 allows up to ±23:59); else the text as sent.
 *
 * @example
 * ```ts
 * readableOffset('2024-01-02T00:00:00+23:59') // '2024-01-01T00:01:00Z'
 * ```
 */
export function readableOffset(text) {
    const read = instant(text);
    if (read === undefined || Math.abs(read.offsetMinutes) < 16 * 60)
        return text;
    const whole = new Date(read.seconds).toISOString().slice(0, -5);
    return `${whole}${read.fraction === '' ? '' : `.${read.fraction}`}Z`;
}
/**
 * Converts the date-time fields of a row (`dateTimes`, the columns whose schema field has `format: 'date-time'`) with
 * `convert`; the row itself when there is nothing to convert.
 */
export function convertDateTimes(values, dateTimes, convert) {
    if (dateTimes === undefined || dateTimes.size === 0)
        return values;
    let converted;
    for (const key of dateTimes) {
        const value = values[key];
        if (typeof value !== 'string')
            continue;
        const stored = convert(value);
        if (stored === undefined || stored === value)
            continue;
        converted ??= { ...values };
        converted[key] = stored;
    }
    return converted ?? values;
}
//# sourceMappingURL=date-time.js.map