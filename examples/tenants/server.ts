import { serve } from '../shared.js'
import { build } from './app.js'

await serve(build, (origin) =>
  'Try: TOKEN=$(node -e "console.log(require(\'fast-jwt\').createSigner({ key: process.env.JWT_SECRET })({ sub: \'ada\', org: \'acme\' }))"); ' +
  `curl -H "authorization: Bearer $TOKEN" '${origin}/projects'`)
