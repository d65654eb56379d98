// run.mjs runs the cache test suite (cache-tests/) against a cache and
// prints the results as the suite's CLI does: one JSON object of test id
// to result, for count.mjs. Usage:
//
//	node run.mjs BASE [ID...]
//
// BASE is the cache's URL (http://127.0.0.1:8080), which must pass
// requests to the suite's origin server (origin.mjs). With IDs it runs
// only those tests and, transitively, the tests they depend on, so that
// count.mjs classifies them as a full run would.
import process from 'node:process'

import { runTests, getResults } from './cache-tests/test-engine/client/runner.mjs'
import tests from './cache-tests/tests/index.mjs'

const [base, ...ids] = process.argv.slice(2)
if (!base) {
  console.error('usage: node run.mjs BASE [ID...]')
  process.exit(2)
}

let toRun = tests
if (ids.length) {
  const byId = new Map()
  for (const suite of tests) {
    for (const test of suite.tests) byId.set(test.id, test)
  }
  const want = new Set()
  const add = id => {
    const test = byId.get(id)
    if (test === undefined) {
      console.error(`run.mjs: no test ${id}`)
      process.exit(2)
    }
    if (want.has(id)) return
    want.add(id)
    for (const dep of test.depends_on || []) add(dep)
  }
  ids.forEach(add)
  toRun = tests.map(suite => ({ ...suite, tests: suite.tests.filter(t => want.has(t.id)) }))
}

await runTests(toRun, false, base).catch(err => {
  console.error(err)
  process.exit(1)
})
console.log(JSON.stringify(getResults(), null, 2))
