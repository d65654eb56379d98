// Package components holds Sluice's built-in pipeline components, one file
// each. Every component X is built by NewX(XOptions) (pipe.Component,
// error), which validates the options and returns an error naming the
// component ("compress: unknown encoding \"lzma\""). The options structs
// carry yaml tags: a config file's `- x: {option: value}` sets them, and
// `- x: scalar` sets the option the component's doc names (see Lookup for
// the registrations the config loader uses).
//
// Components are built once and shared by every request of their route:
// all of them are safe for concurrent use. They see the request through
// pipe.Conn, whose byte slices are valid only during the request.
//
// # Sources: produce the body
//
//   - files: a directory tree, with caching, conditional requests and
//     sendfile (package files).
//   - text: a fixed body, status and Content-Type.
//   - echo: the request body back as application/octet-stream, or the whole
//     request as JSON with every value base64-encoded.
//   - template: html/template files rendered with request data.
//   - cgi: CGI/1.1 scripts (RFC 3875) run as child processes.
//   - status: server counters as HTML, JSON or Prometheus text.
//
// # Filters: transform the body
//
//   - compress: zstd, br, gzip or deflate, negotiated by Accept-Encoding.
//   - rot13: the webpipes paper's demonstration filter.
//
// # Pipes: inspect, route, answer or stop
//
//   - redirect: 301/302/303/307/308 to a target built from the request,
//     never on a host the target does not name.
//   - headers: set, add and remove response and request header fields.
//   - count: count requests, responses and bytes into a Stats for status.
//   - log: access log in common, combined or JSON format.
//   - basic_auth: HTTP Basic authentication against an htpasswd file.
//   - ipfilter: allow and deny client addresses by CIDR.
//   - htaccess: per-directory allow/deny files.
//   - ratelimit: a token bucket per client address, optionally kept in
//     Redis and shared by several instances (package ratelimit/redisstore).
//
// # The registry
//
// Config files name components through a registry (Lookup, All). Every
// component registers itself with Register from an init function, as
// Caddy's modules do: each built-in one above in its own file, and those
// of a Go program that embeds Sluice in the program's package, before it
// loads a config. A registration says the component's kind, its options
// struct, which option a scalar argument sets and which options are
// paths; a registered component is then decoded, checked, explained and
// drawn as a built-in one is (see ExampleRegister). The registry also
// holds the stores ratelimit's redis option opens (RegisterRateStore):
// package ratelimit/redisstore registers its Redis store there.
//
// # A pipeline
//
// The components of a route run in the order written: pipes first, then
// the source, with filters anywhere (they apply, in order, to the body
// once the source's header is final):
//
//	text, _ := components.NewText(components.TextOptions{Body: "Hello, world!\n"})
//	gz, _ := components.NewCompress(components.CompressOptions{Encodings: []string{"gzip"}})
//	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{text, gz})}
package components
