import { config as loadDotenv } from 'dotenv'
import { serve } from '../shared.js'
import { build } from './app.js'

loadDotenv({ quiet: true })

await serve(build, (origin) => `Authorize at ${origin}/docs with ${process.env.DEMO_USERNAME ?? 'demo'} and the DEMO_PASSWORD`)
