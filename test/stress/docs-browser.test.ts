import assert from 'node:assert/strict'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { chromium } from 'playwright-core'
import { createDatabase } from 'fastify-viewsets'
import { build } from '../../examples/auth/app.js'
import { authConfig } from '../../examples/auth/config.js'

// Debian's Chromium, never a download; the flags it needs in a container without a sandbox or a GPU.
const executablePath = '/usr/bin/chromium'
const args = ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
const outputDirectory = join(import.meta.dirname, '..', '..', 'test-output', 'docs-browser')

interface Operation { method: string, path: string, operationId: string, tag: string }

test('/docs of the auth example in Chromium: every operation listed, Authorize with the demo user, Try it out on a protected POST answers 201', async (t) => {
  // The public demo (DEMO=1): its documented demo user, and a key made at startup.
  const env = { DEMO: '1' }
  const { demoUsername, demoPassword } = authConfig(env)
  const db = createDatabase<any>('sqlite::memory:')
  t.after(() => db.destroy())
  const app = await build({ db, env, fastify: { logger: false } })
  t.after(() => app.close())
  const origin = await app.listen({ host: '127.0.0.1', port: 0 })

  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const operations: Operation[] = []
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      operations.push({ method, path, operationId: operation.operationId, tag: operation.tags?.[0] ?? 'default' })
    }
  }
  assert.ok(operations.length >= 7, `the example documents its routes (${operations.length})`)

  const browser = await chromium.launch({ executablePath, args })
  t.after(() => browser.close())
  const page = await browser.newPage()
  const pageErrors: string[] = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  // Nothing leaves 127.0.0.1 (Swagger UI's assets are served by the app).
  const blocked: string[] = []
  await page.route('**/*', async (route) => {
    const url = route.request().url()
    if (url.startsWith(origin) || url.startsWith('data:')) await route.continue()
    else {
      blocked.push(url)
      await route.abort()
    }
  })
  await mkdir(outputDirectory, { recursive: true })
  await rm(join(outputDirectory, 'failure.png'), { force: true })
  try {
    await page.goto(`${origin}/docs`)
    await page.locator('.opblock').first().waitFor()

    // Every operation of the document is rendered, under its tag and operationId.
    assert.equal(await page.locator('.opblock').count(), operations.length)
    for (const operation of operations) {
      const block = page.locator(`#operations-${operation.tag}-${operation.operationId}`)
      assert.equal(await block.count(), 1, `${operation.method.toUpperCase()} ${operation.path} (${operation.operationId}) is listed`)
      assert.equal((await block.locator('.opblock-summary-method').textContent())?.toLowerCase(), operation.method)
    }

    // Authorize: the OAuth2 password flow against the example's /token.
    await page.getByRole('button', { name: 'Authorize' }).first().click()
    await page.locator('#oauth_username').fill(demoUsername)
    await page.locator('#oauth_password').fill(demoPassword)
    const tokenResponse = page.waitForResponse((response) => new URL(response.url()).pathname === '/token')
    await page.locator('.auth-btn-wrapper button.authorize').click()
    assert.equal((await tokenResponse).status(), 200)
    await page.locator('.auth-btn-wrapper button', { hasText: 'Logout' }).waitFor()
    await page.screenshot({ path: join(outputDirectory, 'authorized.png') })
    await page.locator('.auth-btn-wrapper button.btn-done').click()

    // Try it out on the protected POST: the token goes along and the page shows 201.
    const create = operations.find((operation) => operation.method === 'post' && operation.path === '/items')
    assert.ok(create !== undefined, 'POST /items is documented')
    const block = page.locator(`#operations-${create.tag}-${create.operationId}`)
    await block.locator('.opblock-summary').click()
    await block.getByRole('button', { name: 'Try it out' }).click()
    await block.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'From Swagger UI', price: 1 }))
    const created = page.waitForResponse((response) => new URL(response.url()).pathname === '/items' && response.request().method() === 'POST')
    await block.getByRole('button', { name: 'Execute' }).click()
    const response = await created
    assert.match(response.request().headers().authorization ?? '', /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/)
    assert.equal(response.status(), 201, await response.text())
    const status = block.locator('.live-responses-table tr.response .response-col_status').first()
    await status.waitFor()
    assert.equal((await status.textContent())?.trim(), '201')
    await block.locator('.live-responses-table').scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(outputDirectory, 'try-it-out-201.png'), fullPage: true })

    const row = await db.selectFrom('items').select(['name', 'owner']).executeTakeFirst()
    assert.deepEqual(row, { name: 'From Swagger UI', owner: demoUsername })
    assert.deepEqual(pageErrors, [], 'no script errors in the page')
    t.diagnostic(`${operations.length} operations listed; screenshots in test-output/docs-browser/; requests kept from leaving 127.0.0.1: ${blocked.length === 0 ? 'none' : blocked.join(', ')}`)
  } catch (error) {
    await page.screenshot({ path: join(outputDirectory, 'failure.png'), fullPage: true }).catch(() => {})
    throw error
  }
})
