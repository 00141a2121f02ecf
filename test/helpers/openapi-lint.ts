// The two OpenAPI linters issue 34 names, offline and in-process: Redocly's `recommended` and Spectral's
// `spectral:oas`. Shared by the contract test and the outside-tools acceptance (test/stress/openapi-tools.test.ts).
import { createConfig, lintFromString } from '@redocly/openapi-core'
import spectralCore from '@stoplight/spectral-core'
import spectralParsers from '@stoplight/spectral-parsers'
import { oas } from '@stoplight/spectral-rulesets'
import type { OpenApiDocument } from './contract.js'

export interface LintProblem {
  ruleId: string
  severity: string
  message: string
  pointer: string
}

let redoclyConfig: Awaited<ReturnType<typeof createConfig>> | undefined

/** Redocly's `recommended` ruleset over a document, offline. */
export async function redoclyProblems (document: OpenApiDocument): Promise<LintProblem[]> {
  // security-defined is the one exception: public operations may leave `security` out.
  redoclyConfig ??= await createConfig({ extends: ['recommended'], rules: { 'security-defined': 'off' } })
  const problems = await lintFromString({
    source: JSON.stringify(document),
    absoluteRef: 'openapi.json',
    config: redoclyConfig,
  })
  return problems.map((problem) => ({
    ruleId: problem.ruleId,
    severity: problem.severity,
    message: problem.message,
    pointer: problem.location[0]?.pointer ?? '',
  }))
}

let spectral: InstanceType<typeof spectralCore.Spectral> | undefined

/** Spectral's `spectral:oas` ruleset (its recommended rules) over a document, offline. */
export async function spectralProblems (document: OpenApiDocument): Promise<LintProblem[]> {
  if (spectral === undefined) {
    spectral = new spectralCore.Spectral()
    // The ruleset's declared type is Spectral's own RulesetDefinition, which the package's typings do not share.
    spectral.setRuleset({ extends: [[oas as never, 'recommended']] })
  }
  const source = new spectralCore.Document(JSON.stringify(document), spectralParsers.Json, 'openapi.json')
  const results = await spectral.run(source)
  // DiagnosticSeverity: 0 error, 1 warning, 2 information, 3 hint.
  return results.map((result) => ({
    ruleId: String(result.code),
    severity: result.severity === 0 ? 'error' : 'warning',
    message: result.message,
    pointer: `#/${result.path.join('/')}`,
  }))
}
