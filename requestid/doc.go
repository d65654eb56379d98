// Package requestid gives every request an ID: the one a trusted proxy
// sent in a header, or one made here, 32 random hexadecimal digits.
//
// A Stage, placed before the router (config.Config's Handler places the
// config file's request_id so), records the ID on the request's
// pipe.Conn (RequestID, RequestIDAttr for log lines) and makes the
// request's header carry it, under the stage's header name (X-Request-Id
// by default), in place of any value the client sent: so the proxy and
// its HTTP/2 transport pass it upstream, CGI and FastCGI programs see it
// as HTTP_X_REQUEST_ID, and the access log's {req.X-Request-Id} shows it,
// with nothing more to do for each of them. The access log's request_id
// field, the error pages' .RequestID and the error log's request_id
// attribute read it from the Conn.
//
// A received value is believed only from a trusted proxy (a peer in
// Options.TrustedProxies) and only when it is one safe token (Valid):
// 1 to 128 bytes of letters, digits and "-._~+/=:@". Otherwise it is
// dropped and an ID made, so a client cannot choose what lands in the
// logs or upstream.
//
// Making an ID allocates nothing: it reads the runtime's per-thread
// random generator (math/rand/v2), which takes no lock.
package requestid
