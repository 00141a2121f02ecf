import * as library from 'fastify-viewsets'
import type { DatabaseTarget } from '../seed.js'
import type { SystemServer } from '../server.js'
import { buildViewsets } from './viewsets-app.js'

// This library over `createDatabase`, as built from this commit (dist/).

export async function build (target: DatabaseTarget): Promise<SystemServer> {
  return await buildViewsets(target, library)
}
