import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { defaultOptions, runBenchmarks } from '../../benchmarks/run.js'
import { scenarioIds, systemNames } from '../../benchmarks/scenarios.js'
import type { Results } from '../../benchmarks/results.js'

// Runs the benchmark pipeline end to end for a few seconds: seed, four server processes, probes,
// load, results.json, results.md and chart.svg. It checks that the results are well formed and that
// no scenario is broken (errors or non-2xx); it asserts nothing about speed. Each measurement sends a
// fixed number of requests rather than running for a time window: on a busy machine a short window
// could end before any request was answered.

// The timeout only guards against a hang: on a machine busy with other work the build, the seeding and the startup
// phase alone can take minutes.
test('the benchmark pipeline runs end to end and writes well-formed results', { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fastify-viewsets-bench-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const returned = await runBenchmarks(defaultOptions({
    duration: 0.25,
    amount: 20,
    warmup: 0.05,
    rounds: 1,
    databases: ['sqlite'],
    dataDir: join(dir, 'data'),
    outDir: join(dir, 'out'),
    progress: false,
    retryShare: 0,
    log: () => {},
  }))

  const results = JSON.parse(readFileSync(join(dir, 'out', 'results.json'), 'utf8')) as Results
  assert.deepEqual(results, JSON.parse(JSON.stringify(returned)), 'results.json holds what the run returned')
  assert.ok(!Number.isNaN(Date.parse(results.date)))
  assert.equal(results.machine.node, process.version)
  assert.ok(results.machine.cpus >= 1)
  assert.deepEqual(Object.keys(results.databases), ['sqlite'])

  const sqlite = results.databases.sqlite ?? {}
  assert.deepEqual(Object.keys(sqlite), [...scenarioIds])
  for (const [id, scenario] of Object.entries(sqlite)) {
    assert.equal(typeof scenario.title, 'string')
    assert.deepEqual(Object.keys(scenario.systems).sort(), [...systemNames].sort(), `${id}: every system has a cell`)
    for (const [system, cell] of Object.entries(scenario.systems)) {
      const where = `${id} / ${system}`
      assert.notEqual(cell.status, 'failed', `${where}: ${cell.status === 'failed' ? cell.reason : ''}`)
      if (cell.status !== 'measured') {
        assert.ok(cell.reason.length > 0, `${where}: n/a says why`)
        continue
      }
      assert.equal(cell.rounds.length, 1, where)
      for (const key of ['requestsPerSecond', 'p50', 'p99', 'peakRssMiB'] as const) {
        assert.ok(Number.isFinite(cell[key]) && cell[key] >= 0, `${where}: ${key} is a number`)
      }
      assert.ok(cell.requestsPerSecond > 0, `${where}: some requests completed`)
      assert.ok(cell.p99 >= cell.p50, `${where}: p99 ≥ p50`)
      assert.equal(cell.errors, 0, `${where}: no errors`)
      assert.equal(cell.non2xx, 0, `${where}: no non-2xx answers`)
    }
    for (const value of Object.values(scenario.ratios)) assert.ok(Number.isFinite(value) && value > 0)
  }
  // The systems that serve every request shape are all measured on the core scenarios.
  for (const id of ['get', 'list10', 'list100', 'post', 'patch'] as const) {
    for (const system of systemNames) assert.equal(sqlite[id]?.systems[system]?.status, 'measured', `${id} / ${system}`)
    assert.ok((sqlite[id]?.ratios['viewsets/kysely'] ?? 0) > 0)
  }
  assert.equal(sqlite['eager-n1']?.systems.kysely?.status, 'measured')
  for (const target of results.targets) assert.equal(typeof target.met, 'boolean')

  const markdown = readFileSync(join(dir, 'out', 'results.md'), 'utf8')
  assert.match(markdown, /\| scenario \| raw \| kysely \| viewsets \| platformatic \|/)
  assert.match(markdown, /\| GET by id \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \|/)
  const svg = readFileSync(join(dir, 'out', 'chart.svg'), 'utf8')
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/)
  assert.match(svg.trimEnd(), /<\/svg>$/)
  assert.equal((svg.match(/<rect /g) ?? []).length > 20, true, 'the chart has bars')
})
