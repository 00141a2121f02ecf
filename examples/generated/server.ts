import { serve } from '../shared.js'
import { build } from './app.js'

await serve(build, (origin) => `Try: curl '${origin}/books/1'`)
