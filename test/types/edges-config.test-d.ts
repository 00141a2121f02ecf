// Type tests of issue 11: `npm run test:types` compiles this file. Each @ts-expect-error must be an error.
import { expectTypeOf } from 'expect-type'
import { ViewsetErrors } from 'fastify-viewsets'

// the detail constructors take one optional string: the problem's detail
for (const Constructor of [
  ViewsetErrors.Unauthorized,
  ViewsetErrors.BadRequest,
  ViewsetErrors.InvalidValue,
  ViewsetErrors.Unavailable,
]) {
  expectTypeOf(Constructor).constructorParameters.toEqualTypeOf<[detail?: string]>()
}
// NotFound and Forbidden may also list what they are about (a nested write names its child by JSON pointer)
for (const Constructor of [ViewsetErrors.NotFound, ViewsetErrors.Forbidden]) {
  expectTypeOf(Constructor).constructorParameters
    .toEqualTypeOf<[detail?: string, errors?: ReadonlyArray<{ in: string; field: string; message: string }>]>()
}
// @ts-expect-error the old (field, value) form of NotFound is gone
void new ViewsetErrors.NotFound('id', '5')

// Validation takes (detail, errors?), and the errors are readable on the instance
expectTypeOf(
  new ViewsetErrors.Validation('title is taken', [{ in: 'body', field: 'title', message: 'is taken' }]).errors
).toEqualTypeOf<Array<{ in: string; field: string; message: string }> | undefined>()
// @ts-expect-error a field error needs in, field and message
void new ViewsetErrors.Validation('title is taken', [{ field: 'title' }])

// Conflict takes (detail?, errors?): a bulk write's conflict names its element, `/3/email`
expectTypeOf(
  new ViewsetErrors.Conflict('email is taken', [{ in: 'body', field: '/3/email', message: 'is taken' }]).errors
).toEqualTypeOf<Array<{ in: string; field: string; message: string }> | undefined>()
void new ViewsetErrors.Conflict()
// @ts-expect-error a field error needs in, field and message
void new ViewsetErrors.Conflict('email is taken', [{ field: 'email' }])

// UnsupportedOrdering keeps (key, allowed); Internal takes nothing, so nothing can leak through it
void new ViewsetErrors.UnsupportedOrdering('"rating"', 'title, year')
// @ts-expect-error Internal has a fixed, generic detail
void new ViewsetErrors.Internal('password=hunter2')
