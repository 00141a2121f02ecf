// @ts-check
// Fastify's own lint conventions (neostandard, the config Fastify and its plugins use), with a 120-character line.
import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'

export default [
  ...neostandard({ ts: true, ignores: ['dist/', 'node_modules/', 'test-output/', 'benchmarks/.data/', 'coverage/'] }),
  {
    files: ['**/*.ts'],
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // TypeBox's convention: a schema and its type share one name (`const Item = Type.Object(…); type Item = …`).
      '@typescript-eslint/no-redeclare': 'off',
      // `void promise` marks a promise deliberately not awaited; `void value` in type tests marks a use.
      'no-void': ['error', { allowAsStatement: true }],
    },
  },
  {
    rules: {
      '@stylistic/max-len': ['error', {
        code: 120,
        ignoreUrls: true,
        ignoreStrings: true,
        ignoreTemplateLiterals: true,
        ignoreRegExpLiterals: true,
      }],
    },
  },
  {
    // Written by `fastify-viewsets generate` and compared with its output by the tests: its lines are the generator's.
    files: ['examples/generated/db/**'],
    rules: { '@stylistic/max-len': 'off' },
  },
  {
    files: ['lib/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    // The library itself holds every line to 120 characters, strings and SQL included; the lenient rule above stays
    // for tests, benchmarks and examples, whose test titles and fixture strings read better on one line.
    files: ['lib/**/*.ts'],
    rules: { '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true }] },
  },
]
