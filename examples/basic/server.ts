import { serve } from '../shared.js'
import { build } from './app.js'

await serve(build)
