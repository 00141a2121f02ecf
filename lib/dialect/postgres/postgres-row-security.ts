import { sql } from 'kysely'
import type { RowSecurity } from '../dialect.js'
import type { AnyDatabase } from '../../sql.js'

// PostgreSQL's row-level security as `rowLevelSecurity` drives it (http/row-level-security.ts): the settings of a
// request's transaction, and the startup check that the roles and the table make its policies bind.

/** What the catalog says of one role the option names. */
interface RoleFacts {
  readonly rolname: string
  readonly rolsuper: boolean
  readonly rolbypassrls: boolean
  /** Whether the connecting user may `SET ROLE` to it. */
  readonly member: boolean
}

/** A table name as `to_regclass` reads it: each dotted part quoted, so that its case and characters stay. */
function regclassName (table: string): string {
  return table.split('.').map((part) => `"${part.replaceAll('"', '""')}"`).join('.')
}

/** The first reason a role cannot carry the policies, or `undefined`. */
function roleProblem (role: string, facts: RoleFacts | undefined): string | undefined {
  if (facts === undefined) return `role "${role}" does not exist`
  if (facts.rolsuper) return `role "${role}" is a superuser, which bypasses row-level security`
  if (facts.rolbypassrls) return `role "${role}" has BYPASSRLS, which bypasses row-level security`
  if (!facts.member) {
    return `the connecting user cannot SET ROLE "${role}": run GRANT "${role}" TO <the connecting user>`
  }
  return undefined
}

/** The first reason the table's policies would not bind `roles`, or `undefined`. */
async function tableProblem (db: AnyDatabase, table: string, roles: readonly string[]): Promise<string | undefined> {
  const { rows } = await sql<{ relrowsecurity: boolean; relforcerowsecurity: boolean; owner: string }>`
    select c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) as owner
    from pg_class c where c.oid = to_regclass(${regclassName(table)})`.execute(db)
  const [facts] = rows
  if (facts === undefined) return `table "${table}" is not found`
  if (!facts.relrowsecurity) {
    return `table "${table}" has row-level security disabled: run ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY`
  }
  if (roles.includes(facts.owner) && !facts.relforcerowsecurity) {
    return `role "${facts.owner}" owns table "${table}", whose policies do not bind its owner: run ALTER TABLE ` +
      `${table} FORCE ROW LEVEL SECURITY`
  }
  return undefined
}

/** PostgreSQL's row-level security: `set_config` of the claims and the role, and the catalog checks. */
export const postgresRowSecurity: RowSecurity = {
  // set_config('role', …, true) is SET LOCAL ROLE with the name as a parameter: nothing is spliced into SQL.
  settings: (claims, role) =>
    sql`select set_config('request.jwt.claims', ${claims}, true), set_config('role', ${role}, true)`,
  async problem (db, table, roles) {
    const { rows } = await sql<RoleFacts>`
      select r.rolname, r.rolsuper, r.rolbypassrls, pg_has_role(current_user, r.oid, 'MEMBER') as member
      from pg_roles r where r.rolname = any(${[...roles]})`.execute(db)
    for (const role of roles) {
      const problem = roleProblem(role, rows.find((facts) => facts.rolname === role))
      if (problem !== undefined) return problem
    }
    return await tableProblem(db, table, roles)
  },
}
