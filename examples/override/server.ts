import { config as loadDotenv } from 'dotenv'
import { serve } from '../shared.js'
import { build } from './app.js'

loadDotenv({ quiet: true })

await serve(build)
