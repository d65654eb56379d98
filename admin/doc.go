// Package admin is Sluice's admin API: a small HTTP API, JSON in and
// out, through which a running server's config is read and replaced,
// its proxies' upstream sets are changed without a reload, and its
// caches are purged. A config's admin section turns it on (see
// config.Admin); without one there is no API.
//
// # Listening
//
// The API listens on a Unix socket by default, created with mode 0600
// and owned by the server's user: only that user (and root) reaches it,
// and each change is logged with the caller's user and process, read
// from the socket's peer credentials (SO_PEERCRED). It may listen on a
// loopback TCP address instead, where every request needs a bearer
// token the config names; the log then names the token, never showing
// it.
//
// # Endpoints
//
//	GET    /config            the running config: its file name and YAML text
//	POST   /load              a whole new config (the body), validated as sluice check does, then applied as a reload
//	GET    /upstreams         every proxy's upstream set, with each host's health and load
//	GET    /upstreams/NAME    one set
//	PUT    /upstreams/NAME    replace the set's hosts: {"hosts": [{"name": ..., "weight": ..., "drain": ...}]}
//	PATCH  /upstreams/NAME    change some: {"add": [...], "remove": ["name"]}; adding a host named already sets its weight and drain
//	POST   /purge             purge cached responses: cache_purge's JSON body, with "host"
//
// Errors are JSON objects, {"error": "what went wrong"}, and for a config
// that is not valid {"error": ..., "errors": [{"file": ..., "line": ...,
// "col": ..., "message": ...}]}, with the status saying whose fault it
// is (400 for the caller's, 401 for a missing or wrong token, 404 for no
// such set, 503 when not every worker confirmed a change).
//
// A Server serves the API for a Backend: Local for a daemon.Server, and
// a supervisor.Master for its workers. Server saves what it applies in
// the admin section's state file (see State), from which sluice serve
// --resume starts.
package admin
