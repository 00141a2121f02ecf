import { serve } from '../shared.js'
import { build } from './app.js'

// With DEMO_PASSWORD set, POST /token signs a token for the user demo of the organisation acme (and /docs' Authorize
// button uses it); without it, sign one by hand as below.
await serve(build, (origin) =>
  'Try: TOKEN=$(node -e "console.log(require(\'fast-jwt\').createSigner({ key: process.env.JWT_SECRET })({ sub: \'ada\', org: \'acme\' }))"); ' +
  `curl -H "authorization: Bearer $TOKEN" '${origin}/projects'`)
