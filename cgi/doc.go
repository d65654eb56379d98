// Package cgi is a CGI/1.1 gateway (RFC 3875): a Gateway is a pipeline
// Source that runs a program for each request, the request's
// meta-variables in its environment, the request body on its stdin, and
// its stdout parsed as a CGI response (header fields, then the body
// streamed to the client, flushed whenever the program pauses). It needs
// only packages pipe and engine: a Go program puts a Gateway in a
// pipe.Chain as it would any component, and the cgi component of a
// config file is a Gateway built from the file's options.
//
// # Paths
//
// The request path becomes SCRIPT_NAME and PATH_INFO only if it has no
// "." or ".." segment, no empty segment but a trailing slash's and no
// control byte, whatever the server made of the request-target: any other
// is refused with 400. PATH_TRANSLATED is PATH_INFO under DocRoot.
//
// # Bodies
//
// The request body is streamed to the program (a chunked one is read
// whole first, see MaxBody); what the program leaves unread is read and
// dropped. The engine reads and writes a connection on one goroutine, so
// nothing is sent until the whole body has been read: output the program
// writes meanwhile is held, in memory up to 256 KiB and beyond that in an
// unlinked temporary file.
//
// # Processes
//
// The program is executed directly, never through a shell, in its own
// process group and with its directory as the working directory. On
// Linux the group is killed when the timeout expires, when the client
// goes away (the server notices while the program runs, see
// pipe.Conn.Gone), when the component is closed, and when the program has
// finished, so no process of a request outlives it (elsewhere only the
// program itself is killed). The program is reaped as soon as it has
// exited and its group is killed, whatever the request is still doing.
// At most MaxRunning programs run at once. Its stderr goes to the Logger,
// line by line, at most 100 lines of 4 KiB per request.
//
// Close kills every program still running and waits until they are
// reaped (at most 10 s: a program stuck in an uninterruptible sleep cannot
// be, and is logged); requests after it get 503. A config closes its
// components when it is retired (by a reload, or at shutdown) and, once
// the server's grace period has run out, under the requests still in
// flight.
//
// # Responses
//
// Response header handling (RFC 3875 §6): "Status: 404 Not Found" sets
// the status (a 1xx is not a final status and is ignored); a Location without a Status answers 302 with that Location
// — for a local path too (§6.2.2 allows a server to answer a local
// redirect as a client redirect: a component cannot re-run the request
// through the server's other routes); hop-by-hop fields are dropped, the
// rest are passed on. A program that ends without a valid header (one of
// Content-Type, Location or Status, then a blank line) is answered 502,
// one that times out before it 504. The query string is never passed as
// command-line arguments (§4.4 allows omitting that, and it is how
// CVE-2012-1823 happened).
//
// # The environment
//
// The meta-variables are RFC 3875's — AUTH_TYPE, CONTENT_LENGTH,
// CONTENT_TYPE, GATEWAY_INTERFACE, PATH_INFO, PATH_TRANSLATED,
// QUERY_STRING, REMOTE_ADDR, REMOTE_HOST, REMOTE_USER, REQUEST_METHOD,
// SCRIPT_NAME, SERVER_NAME, SERVER_PORT, SERVER_PROTOCOL, SERVER_SOFTWARE
// (REMOTE_USER, and AUTH_TYPE with the scheme of the request's
// Authorization, only for a user an earlier component admitted, such as
// basic_auth, recorded as the Conn's value "user" — never for credentials
// the client merely sent) — plus
// REMOTE_PORT, REQUEST_URI, SCRIPT_FILENAME, DOCUMENT_ROOT and PATH, and an
// HTTP_* variable per request header field, except: Proxy (never
// HTTP_PROXY: httpoxy, CVE-2016-5385), Authorization and
// Proxy-Authorization (§4.1.18), Content-Type and Content-Length (in their
// own variables), Transfer-Encoding, and any field whose name has a
// character other than a letter, digit or '-' (so X_Forwarded_For cannot
// pose as X-Forwarded-For). Repeated fields are joined with ", " ("; " for
// Cookie). SERVER_NAME and SERVER_PORT come from the Host field (port 80
// when it has none, 443 over TLS). A request over TLS also sets HTTPS=on
// and REQUEST_SCHEME=https, as Apache and nginx do.
package cgi
