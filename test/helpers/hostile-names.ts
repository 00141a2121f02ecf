/**
 * A database whose names attack the code `generate` writes: each name is a payload that runs if it reaches
 * generated source raw (in a comment, a template literal or a string with the wrong escapes), and the rest
 * are names that break naive conversion to identifiers, keys and URL segments. Every name fits the
 * 63-byte identifier limit of PostgreSQL and the 64-character one of MySQL.
 */
import type { TestDialect } from './database.js'

// Payloads without a dot: a dot in a table name is refused (Kysely reads it as schema.table), and a payload
// that contains one would only test that refusal.
const exit = (code: number) => `globalThis["process"]["exit"](${code})`

/** Table and view names; a payload's exit code or file names which one ran. */
export const hostileNames = {
  /** Closes a JSDoc comment and writes the file PWNED (the issue's payload, without dots and within 63 bytes). */
  comment: 'n*/import("fs")["then"](f=>f["writeFileSync"]("PWNED","1"))/*',
  /** Runs inside a template literal (the route prefix). */
  template: `items\${${exit(42)}}`,
  /** A view, served through --key, whose newline ends a `//` comment. */
  newlineView: `v\n${exit(43)}\nv`,
  /** A view without a key (skipped: its name goes into the "Not served" comment). */
  skippedView: `skipped\n${exit(48)}\nv`,
  /** A carriage return is a line terminator in JavaScript too. */
  carriageReturn: `cr\r${exit(49)}\rx`,
  /** U+2028 ends a line in JavaScript, and JSON.stringify leaves it raw. */
  lineSeparator: `ls\u2028${exit(50)}\u2028x`,
  /** Quotes and a backtick. */
  quotes: 'q\'uo"te`s',
  /** A dot: Kysely reads `a.b` as a schema and a table. */
  dot: 'dot.name',
  /** 61 bytes. */
  long: `t${'_long'.repeat(12)}`,
  /** Two names that PascalCase alike. */
  snake: 'order_items',
  camel: 'orderItems',
  /** The name of an import of the generated files (TypeBox's `Type`). */
  imported: 'type',
  /** Nothing left after stripping to ASCII. */
  nonAscii: '日本',
  /** Starts with a digit. */
  digits: '2fast',
  /** A reserved word. */
  reserved: 'class',
  /** Its foreign key column is hostile. */
  kids: 'kids',
  /** Hostile column names and an enum. */
  columns: 'cols',
} as const

/** Column names of `cols`, each a payload or an odd character. */
export const hostileColumns = {
  quoted: 'it\'s "quoted"',
  backtick: 'back`tick',
  newline: 'new\nline',
  nonAscii: 'naïve ünï',
  template: `\${${exit(44)}}`,
  comment: `*/ ${exit(45)} /*`,
  digits: '2nd',
  enum: 'mood',
} as const

/** The enum's values: one closes a comment and one carries a quote. */
export const hostileEnum = ['ok', `it's */ ${exit(46)} /*`] as const

/** The foreign key column of `kids`, which names a many-to-one relation. */
export const hostileForeignKey = `w\n*/ ${exit(47)} /*_id`

function quote (dialect: TestDialect['name'], name: string): string {
  return dialect === 'mysql' ? `\`${name.replaceAll('`', '``')}\`` : `"${name.replaceAll('"', '""')}"`
}

function text (value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/** The statements that create the hostile database. */
export function hostileSchema (dialect: TestDialect['name']): string[] {
  const q = (name: string) => quote(dialect, name)
  const id = {
    sqlite: 'integer primary key autoincrement',
    postgres: 'serial primary key',
    mysql: 'integer primary key auto_increment',
  }[dialect]
  const enumValues = hostileEnum.map(text).join(', ')
  const mood = {
    sqlite: `text check (${q(hostileColumns.enum)} in (${enumValues}))`,
    postgres: q('mood */ type'),
    mysql: `enum(${enumValues})`,
  }[dialect]
  const simple = [
    hostileNames.comment,
    hostileNames.template,
    hostileNames.carriageReturn,
    hostileNames.lineSeparator,
    hostileNames.quotes,
    hostileNames.dot,
    hostileNames.long,
    hostileNames.snake,
    hostileNames.camel,
    hostileNames.imported,
    hostileNames.nonAscii,
    hostileNames.digits,
    hostileNames.reserved,
  ]
  const c = hostileColumns
  return [
    ...(dialect === 'postgres' ? [`create type ${q('mood */ type')} as enum (${enumValues})`] : []),
    ...simple.map((name) => `create table ${q(name)} (id ${id}, label varchar(50))`),
    `create table ${q(hostileNames.columns)} (id ${id}, ${q(c.quoted)} varchar(20), ${q(c.backtick)} varchar(20),
      ${q(c.newline)} varchar(20), ${q(c.nonAscii)} varchar(20), ${q(c.template)} varchar(20), ${q(c.comment)} integer,
      ${q(c.digits)} integer, ${q(c.enum)} ${mood})`,
    `create table ${q(hostileNames.kids)} (id ${id},
      ${q(hostileForeignKey)} integer references ${q(hostileNames.template)} (id))`,
    `create view ${q(hostileNames.newlineView)} as select id, label from ${q(hostileNames.comment)}`,
    `create view ${q(hostileNames.skippedView)} as select id, label from ${q(hostileNames.comment)}`,
  ]
}
