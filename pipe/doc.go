// Package pipe builds web servers out of small components, after the
// webpipes toolkit: every route is a pipeline, and the code (or the config
// file) that builds it reads like the network it runs.
//
// # Components
//
// A Component has one method, Handle(*Conn) bool. Despite its name, a
// Conn is one request, not a connection: each request on a keep-alive
// connection gets its own Conn, and nothing in a Conn outlives its
// request. Three function types cover the kinds of component:
//
//   - a Pipe inspects or routes the request, and may answer it and stop
//     the pipeline (an authentication check, a router, a logger);
//   - a Source produces the body (files, text, a template);
//   - a Filter transforms the body (compression, rot13).
//
// # Two phases
//
// Answering a request has a setup phase and a content phase. In the setup
// phase the components run in pipeline order on a Conn: pipes decide,
// the source sets the status and header and hands over the Content that
// will write the body, filters register themselves. In the content phase
// the Content writes into a stack of filter writers: each filter wraps the
// writer beneath it (as gzip.NewWriter wraps its output), so content
// passes the filters in the order the pipeline lists them with no
// goroutine, pipe or copy per filter. Filters are stacked when the header
// is final — at the source's first write — so they can decide by the
// source's Content-Type or length, and leave the content alone by
// returning nil. Flush goes through every filter to the client.
//
// # Running a pipeline
//
// A Chain runs components as function calls; a ProcNetwork runs the same
// components as a process network, one goroutine per component joined by
// channels. Either is a Component, so pipelines nest: a Router sends each
// request down the pipeline of the route that matches it (by path, a
// regular expression among them, then host, method and the route's
// Matchers), Branch and If choose sub-pipelines by any condition. Handler serves a pipeline with
// the engine, HTTPHandler with net/http.
//
// # Error pages
//
// ErrorPages, a component placed before the router (and, for a route's
// own, in Route.ErrorPages), answers error statuses with HTML pages
// rendered from templates: every status of 400 or more decided in the
// setup phase, Conn.Error's included, gets the page for its status or
// class, with its fields that carry meaning kept.
//
// # net/http
//
// FromHTTP makes any http.Handler a source and Middleware makes any
// func(http.Handler) http.Handler a component that wraps the rest of the
// pipeline. Their requests' contexts are cancelled when the client goes,
// as Conn.Gone tells native components.
package pipe
