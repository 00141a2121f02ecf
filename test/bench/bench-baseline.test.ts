import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { resolveCommit } from '../../benchmarks/baseline.js'
import { chartSvg } from '../../benchmarks/chart.js'
import { consoleReport, markdownReport, throughputTable } from '../../benchmarks/report.js'
import { addRatios } from '../../benchmarks/results.js'
import type { Results } from '../../benchmarks/results.js'
import { defaultOptions, optionsFromArgs, runBenchmarks } from '../../benchmarks/run.js'
import { systemNames } from '../../benchmarks/scenarios.js'

// `npm run bench -- --baseline <ref>`: the options it implies, and the reports with and without the baseline's
// column, rendered from the committed results.json (nothing is measured here).

const committed = () =>
  JSON.parse(readFileSync(new URL('../../benchmarks/results.json', import.meta.url), 'utf8')) as Results

/** The committed run, as if a baseline at half of viewsets' speed (and twice its CPU per request) had run beside it. */
function withBaseline (): Results {
  const results = committed()
  results.settings.baseline = { ref: 'main~1', commit: '0123456789abcdef0123456789abcdef01234567' }
  for (const scenarios of Object.values(results.databases)) {
    for (const result of Object.values(scenarios)) {
      const viewsets = result.systems.viewsets
      if (viewsets?.status !== 'measured') continue
      const half = <T extends { requestsPerSecond: number; cpuMicrosPerRequest: number }>(sample: T): T => ({
        ...sample,
        requestsPerSecond: sample.requestsPerSecond / 2,
        cpuMicrosPerRequest: sample.cpuMicrosPerRequest * 2,
      })
      result.systems['viewsets-baseline'] = { ...half(viewsets), rounds: viewsets.rounds.map(half), note: 'a note' }
    }
    addRatios(scenarios)
  }
  return results
}

test('--baseline adds viewsets-baseline to the systems and leaves the README alone', () => {
  assert.deepEqual(optionsFromArgs(['--baseline', '4ff4b4d', '--systems', 'viewsets,raw']).systems, [
    'viewsets',
    'raw',
    'viewsets-baseline',
  ])
  assert.deepEqual(optionsFromArgs(['--baseline', '4ff4b4d', '--systems', 'viewsets-baseline,viewsets']).systems, [
    'viewsets-baseline',
    'viewsets',
  ])
  const all = optionsFromArgs(['--baseline', '4ff4b4d'])
  assert.deepEqual(all.systems, [...systemNames, 'viewsets-baseline'])
  assert.equal(all.readme, false)
  assert.deepEqual(optionsFromArgs([]).systems, systemNames, 'not in a default run')
})

test('viewsets-baseline without --baseline, or an unknown ref, stops the run before anything is built', async () => {
  await assert.rejects(
    runBenchmarks(defaultOptions({ systems: ['viewsets', 'viewsets-baseline'], outDir: undefined, log: () => {} })),
    /--systems viewsets-baseline needs --baseline <git-ref>/
  )
  assert.throws(
    () => resolveCommit('no-such-ref-anywhere'),
    /--baseline no-such-ref-anywhere: not a commit of this repository/
  )
  assert.match(resolveCommit('HEAD'), /^[0-9a-f]{40}$/)
})

test('the reports show the baseline column and its ratios only when it ran', () => {
  const plain = committed()
  // The tables, the intro and the chart: analysis.md's prose, carried into results.md, may name baselines.
  const plainLines = markdownReport(plain).split('\n')
  assert.deepEqual(
    plainLines.filter((line) => line.startsWith('| scenario') && /baseline/.test(line)),
    []
  )
  assert.deepEqual(
    plainLines.filter((line) => /\*\*viewsets, baseline\*\*|^- † viewsets, baseline/.test(line)),
    []
  )
  for (const text of [consoleReport(plain), chartSvg(plain)]) assert.doesNotMatch(text, /baseline/)

  const results = withBaseline()
  const [header, , get] = throughputTable(results, 'sqlite')
  assert.match(header ?? '', /\| viewsets, own Kysely \| viewsets, baseline \| .* \| viewsets ÷ baseline \|$/)
  assert.match(get ?? '', /^\| GET by id \|.* † \|.* \| 2\.00× \|$/)
  const markdown = markdownReport(results)
  assert.match(markdown, /\| baseline ÷ viewsets \|/)
  assert.match(markdown, /over the library built at `main~1` \(0123456789ab/)
  assert.match(markdown, /- † viewsets, baseline, GET by id: a note/)
  assert.match(consoleReport(results), /vs ÷ baseline/)
  assert.match(chartSvg(results), /viewsets 2\.00× baseline/)
})
