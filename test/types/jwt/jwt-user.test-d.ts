// Type tests of ViewsetToken when the app declares its @fastify/jwt user type. A program of its own
// (test/types/jwt/tsconfig.json): the declaration below changes the type for the whole program.
import type {} from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import type { Generated } from 'kysely'
import { expectTypeOf } from 'expect-type'
import { Viewset } from 'fastify-viewsets'
import type { CreateRequest, ViewsetToken } from 'fastify-viewsets'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sub: string, role: 'admin' | 'user' }
    user: { sub: string, role: 'admin' | 'user' }
  }
}

interface DB { items: { id: Generated<number>, name: string, owner: string | null } }
const Item = Type.Object({ id: Type.Optional(Type.Integer({ readOnly: true })), name: Type.String() })
void Item

// the app's user type, as request.user has it
expectTypeOf<ViewsetToken['role']>().toEqualTypeOf<'admin' | 'user'>()
expectTypeOf<ViewsetToken['sub']>().toEqualTypeOf<string>()
// @ts-expect-error no claim outside the declared user type
void ({} as ViewsetToken).email

class Owned extends Viewset<DB, 'items', typeof Item> {
  override async createElement (request: CreateRequest<typeof Item>, _reply: FastifyReply, token: ViewsetToken | null) {
    // the README's owner: token?.sub
    return await this.insert({ ...this.writable(request.body), owner: token?.sub ?? null })
  }
}
void Owned
