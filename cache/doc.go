// Package cache is a shared HTTP cache (RFC 9111) that sits in a
// pipeline: a pipe.Wrapper that answers a request from its store, or
// runs the rest of the pipeline (the components after it) and stores
// what they produce, source and filters together. It stands before any
// source: a proxy, a template, a CGI program, text.
//
//	c, _ := cache.New(cache.Options{Size: 256 << 20})
//	pipeline := pipe.Chain{logger, c, compress, proxy}
//
// # Placement
//
// Components before the cache run on every request, and their filters
// apply to hits and misses alike: the cache nests its storing filter
// beneath the rest's filters and above theirs (pipe.Conn.NestFilters), so
// they see the same bytes and header either way. Components after it run
// only on misses and revalidations. The cache stores what they produce:
// compress after the cache stores one compressed variant per coding
// (Vary: Accept-Encoding), compress before it compresses every hit.
//
// # Keys
//
// A primary key is the method class (HEAD shares GET's responses), the
// scheme, the host in lower case without its default port, the canonical
// path (the one routing used, engine.Request.Path), the query as sent,
// and the extra parts Options.Key names (a header field, a cookie). A
// stored response's Vary names the request fields of its secondary key;
// Accept-Encoding counts as the coding it rates best among zstd, br,
// gzip, deflate and identity, so spellings of one preference share a
// variant (and a variant whose Content-Encoding the request does not
// accept is a miss). Vary: * is never stored.
//
// Request fields that origins read to build links although no key holds
// them (X-Forwarded-Host, X-Host, X-Original-URL, X-Rewrite-URL,
// Forwarded and the method overrides) are removed from every GET and
// HEAD before the rest of the pipeline sees it, unless Options.Key names
// them; with cookie key parts, only the keyed cookies pass. A request
// with other cookies, or with Authorization, has its response stored
// only when the response allows it explicitly (public, s-maxage; for
// Authorization also must-revalidate) or, for cookies, varies on Cookie.
// A response with Set-Cookie is not stored unless
// Options.StoreSetCookie says so.
//
// # Freshness and validation
//
// Freshness is s-maxage, max-age, Expires minus Date, or the heuristic
// of §4.2.2 (Options.HeuristicFraction of the time since Last-Modified,
// capped by HeuristicMax) for heuristically cacheable statuses and
// public responses; age is §4.2.3's. The request's no-cache (and an
// HTTP/1.0 Pragma: no-cache), max-age, min-fresh, max-stale and
// only-if-cached are honoured, and the response's no-store, private,
// no-cache (qualified forms drop the fields named), must-revalidate,
// proxy-revalidate, public, must-understand, stale-while-revalidate and
// stale-if-error. A response's CDN-Cache-Control (RFC 9213), when it is a
// valid Structured Field Dictionary, decides instead of its Cache-Control.
// A stale response with a validator is revalidated with
// If-None-Match and If-Modified-Since in place of the client's own
// preconditions, which the cache then evaluates itself; a 304 freshens
// the stored header (§3.2); a 5xx is answered with the stale response
// only where stale-if-error or Options.StaleIfError allow.
//
// # Answers from the store
//
// Every answer carries Age (on a stored miss too) and Cache-Status (RFC
// 9211) naming the cache: hit (with a negative ttl when stale, and detail=max-stale or
// stale-while-revalidate), fwd=uri-miss|vary-miss|miss|stale|request,
// fwd-status, stored, ttl, collapsed, and detail giving why a response
// was not stored. HEAD is answered from a stored GET; If-None-Match,
// If-Modified-Since, If-Match and If-Unmodified-Since from the stored
// validators (package conditional, as files evaluates them); a byte Range
// of a complete stored 200 with a 206 (several ranges as
// multipart/byteranges).
// Partial (206) responses from the rest are passed through unstored.
//
// # Protecting the origin
//
// Concurrent misses for one key make one request down the pipeline; the
// others wait up to Options.LockTimeout for its header and then read the
// body as it streams in. A response that cannot be stored releases them
// to fetch on their own and leaves a short hit-for-pass marker so that
// later requests for the key do not wait. A client that goes away does
// not abort a store: the fetch goes on while the body fits or others
// read it. Unsafe methods invalidate the target and the Location and
// Content-Location on the same host when the response is not an error.
//
// # Store
//
// Responses are kept in memory under a byte budget (Options.Size)
// counting header fields, bodies and a charge per entry, evicted by
// package evict's policy (S3-FIFO: keys read once go first). Bodies'
// chunks come from the cache's arena (mapped outside the Go heap where
// the platform allows) and go back to it when the last request reading
// a body that left the store is done with it. Options.MaxObjectSize
// bounds one body, MaxHeaderSize its header, MaxKeys the number of
// entries.
//
// With Options.Path the responses are kept on disk instead, as objects
// of a cache/disk store: the meta in the object's head (a versioned
// binary encoding), the body written to the file as it streams in and
// read along by collapsed requests, hits sent from the file with
// pipe.SendFile, a 304's header stored with SetHead. Every process that
// opens the directory shares what is stored, across restarts; Vary
// markers are objects too, with a random generation. Close the Cache to
// close its store.
package cache
