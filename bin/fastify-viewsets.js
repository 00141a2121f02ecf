#!/usr/bin/env node
/* global process, URL */
// `npx fastify-viewsets generate ...`: runs the built command (dist/), or, in a clone of the
// repository before `npm run build` (or with FASTIFY_VIEWSETS_SOURCE=1, as the tests set it so that
// a stale dist/ is never what they test), the TypeScript source through tsx (a devDependency).
import { existsSync } from 'node:fs'

const built = new URL('../dist/generate/command.js', import.meta.url)
let command
if (existsSync(built) && process.env.FASTIFY_VIEWSETS_SOURCE !== '1') {
  command = await import(built.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  command = await import(new URL('../lib/generate/command.ts', import.meta.url).href)
}
process.exitCode = await command.main(process.argv.slice(2))
