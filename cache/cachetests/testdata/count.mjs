// count.mjs reads the results the cache test suite's CLI printed
// (cache-tests/test-engine/cli.mjs: a JSON object of test id to result)
// and classifies every test of the suite with the suite's own
// determineTestResult (cache-tests/test-engine/lib/results.mjs), as
// cache-tests.fyi does. Usage:
//
//	node count.mjs RESULTS.json [MORE.json...]
//
// Several files are merged, a later one's result for a test replacing
// an earlier one's (a run of a few tests again, run.mjs ID..., over a
// full run). It prints one JSON object on a line:
//
//	passed           tests passed, required and optimal (result "pass")
//	required_failed  required tests failed (result "fail")
//	optional_failed, checks_yes, checks_no, harness, setup, dependency,
//	retry, untested  the other results, counted
//	failed_required  the ids of the required tests failed, sorted
//	passed_required  the ids of the required tests passed, sorted
//
// A check passed ("yes") is not a test passed, and a test whose
// dependency failed is neither passed nor failed: cache-tests.fyi's
// figures count them so.
import { readFileSync } from 'node:fs'

import { determineTestResult, resultTypes } from './cache-tests/test-engine/lib/results.mjs'
import tests from './cache-tests/tests/index.mjs'

const names = new Map(Object.entries(resultTypes).map(([name, type]) => [type, name]))

function isRequired (test) {
  return test.kind === 'required' || test.kind === undefined
}

function count (results) {
  const c = {
    tests: 0,
    passed: 0,
    required_failed: 0,
    optional_failed: 0,
    checks_yes: 0,
    checks_no: 0,
    harness: 0,
    setup: 0,
    dependency: 0,
    retry: 0,
    untested: 0,
    failed_required: [],
    passed_required: []
  }
  for (const suite of tests) {
    for (const test of suite.tests) {
      c.tests++
      const name = names.get(determineTestResult(tests, test.id, results))
      switch (name) {
        case 'pass':
          c.passed++
          if (isRequired(test)) c.passed_required.push(test.id)
          break
        case 'fail':
          c.required_failed++
          c.failed_required.push(test.id)
          break
        case 'optional_fail': c.optional_failed++; break
        case 'yes': c.checks_yes++; break
        case 'no': c.checks_no++; break
        case 'harness_fail': c.harness++; break
        case 'setup_fail': c.setup++; break
        case 'dependency_fail': c.dependency++; break
        case 'retry': c.retry++; break
        case 'untested': c.untested++; break
        default: throw new Error(`test ${test.id}: unknown result ${name}`)
      }
    }
  }
  c.failed_required.sort()
  c.passed_required.sort()
  return c
}

const files = process.argv.slice(2)
if (!files.length) {
  console.error('usage: node count.mjs RESULTS.json [MORE.json...]')
  process.exit(2)
}
const merged = {}
for (const file of files) {
  Object.assign(merged, JSON.parse(readFileSync(file, 'utf8')))
}
console.log(JSON.stringify(count(merged)))
