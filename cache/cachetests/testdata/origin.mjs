// origin.mjs runs the cache test suite's origin server, as
// cache-tests/test-engine/server/server.mjs does, but on a loopback
// address: node origin.mjs [PORT] listens on 127.0.0.1:PORT (default 0,
// a free port) and prints "listening http://127.0.0.1:PORT/" once it
// does. It serves until killed.
import http from 'node:http'
import process from 'node:process'

import handleConfig from './cache-tests/test-engine/server/handle-config.mjs'
import handleState from './cache-tests/test-engine/server/handle-state.mjs'
import handleTest from './cache-tests/test-engine/server/handle-test.mjs'

const port = Number(process.argv[2] || 0)

function handle (request, response) {
  const url = new URL(request.url, 'http://localhost/')
  const segs = url.pathname.split('/')
  segs.shift()
  const dispatch = segs.shift()
  if (dispatch === 'config') {
    handleConfig(segs, request, response)
  } else if (dispatch === 'test') {
    handleTest(segs, request, response)
  } else if (dispatch === 'state') {
    handleState(segs, request, response)
  } else {
    response.statusCode = 404
    response.end('not a path of the cache test suite\n')
  }
}

const server = http.createServer(handle)
server.listen(port, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/`)
})
