/**
 * Drives Swagger UI in a real browser: Authorize with the demo user (password flow against /token),
 * then "Try it out" on POST /items, which must answer 201. Not part of `npm test` (it needs Chromium):
 *
 *   CHROMIUM=/usr/bin/chromium node --conditions=source --import tsx examples/auth/swagger-ui-check.ts
 */
import { chromium } from 'playwright-core'
import { createDatabase } from 'fastify-viewsets'
import { build } from './app.js'
import { authDefaults } from './config.js'

const db = createDatabase<any>('sqlite::memory:')
// DEMO=1: the published demo user; the key is random per start.
const app = await build({ db, env: { DEMO: '1' } })
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' })
try {
  const page = await browser.newPage()
  await page.goto(`${address}/docs`)
  await page.getByRole('button', { name: 'Authorize' }).first().click()
  await page.locator('#oauth_username').fill(authDefaults.DEMO_USERNAME)
  await page.locator('#oauth_password').fill(authDefaults.DEMO_PASSWORD)
  const tokenResponse = page.waitForResponse((response) => response.url().endsWith('/token'))
  await page.locator('.auth-btn-wrapper button.authorize').click()
  console.log('POST /token from Swagger UI:', (await tokenResponse).status())
  await page.locator('.auth-btn-wrapper button.btn-done').click()

  const operation = page.locator('#operations-items-createItems')
  await operation.locator('.opblock-summary').click()
  await operation.getByRole('button', { name: 'Try it out' }).click()
  await operation.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'From Swagger UI', price: 1 }))
  const created = page.waitForResponse((response) => response.url().endsWith('/items') && response.request().method() === 'POST')
  await operation.getByRole('button', { name: 'Execute' }).click()
  const response = await created
  console.log('POST /items from Swagger UI:', response.status(), 'sent', response.request().headers().authorization?.replace(/\..*$/, '.…'), await response.text())
  if (response.status() !== 201) process.exitCode = 1
} finally {
  await browser.close()
  await app.close()
  await db.destroy()
}
