// Package daemon runs a Sluice config as a server, for as long as the
// process lives: it opens the listeners the config lists, serves the
// routes, loads the config again without dropping a request, reopens log
// files after rotation, writes the pid file, and shuts down gracefully.
// The sluice command's serve and demo are thin layers over it; a Go
// program that embeds Sluice runs its configs the same way.
//
// # A server
//
// A Server is told how to load its config; everything else has a
// default:
//
//	srv := &daemon.Server{
//		Load: func(ctx components.Context) (*config.Config, error) {
//			return (&config.Loader{Context: ctx}).Load("site.yaml")
//		},
//		Name: "site.yaml",
//	}
//	ctx, stop := daemon.HandleSignals(context.Background(), srv)
//	defer stop()
//	if err := srv.Run(ctx); err != nil { ... }
//
// Run is Start, then waiting, then Shutdown. Start loads the config, sets
// up the log its log section asks for, logs the config's warnings, opens
// every listen address and writes pid_file. Load is called again by every
// Reload, so it should read the file anew; a config built in Go rather
// than read from a file is returned from Load the same way.
//
// # Reload
//
// Reload loads the config again and, if it is valid and its new
// addresses can be opened, swaps it in: requests that start afterwards
// use the new config, requests in flight finish on the old one, and the
// old one is closed when the last of them is done or Grace has passed
// (Switch does this, and can be used on its own as an engine.Handler).
// Listen addresses the new config adds are opened before the swap, those
// it drops are closed after it; connections already accepted on a
// dropped address stay open. A config that fails to load, or an address
// that cannot be opened, leaves the running config serving. The rest of
// the file applies too: limits, server_header and new methods through
// the engine's setters (engine.Server.SetLimits), the log section and
// pid_file; only workers keeps its running value until a restart, with a
// warning.
//
// # TLS
//
// A listen entry with tls is served over TLS (engine.ServeWith) with the
// certificates of package certs: TLS 1.2 and 1.3, the ECDHE and AEAD
// suites of certs.CipherSuites, ALPN h2 and http/1.1 (http/1.1 alone
// with http2: false) and crypto/tls's session tickets. Each TLS
// listener's GetCertificate reads the certificates of the config of the
// moment (a certs.Endpoint), chosen by SNI, so a Reload swaps them for
// new handshakes without closing a connection. Every listener's requests
// pass its options first: hsts sets Strict-Transport-Security,
// redirect_to_https answers 308 to the same URL over HTTPS. The
// certificates are read by Load, so before Start switches to the
// config's user, and by each Reload as that user.
//
// The Server keeps one certs.Manager across reloads: a tls section with
// acme takes its certificates from it, obtained in the background from
// Start on and renewed, with TLS-ALPN-01 answered in GetCertificate and
// HTTP-01 on every plain listener before its routes and redirect; and
// certificates that name an OCSP responder are served with its answer
// stapled (ocsp_stapling: false turns it off). A worker of a supervisor
// (ACMECacheOnly) serves instead what its master's certs.Issuer keeps in
// the data directory.
//
// # Driving it
//
// The lifecycle is a set of methods — Start, Reload, ReopenLogs,
// Shutdown(ctx), Addrs — that return errors rather than exit, so that the
// process's signals are only one way to drive it. HandleSignals is that
// way (SIGHUP reloads, SIGUSR1 reopens the logs, SIGINT and SIGTERM stop,
// as with nginx); a supervising parent, a control connection or a test
// calls the methods. Sockets opened elsewhere — inherited from a parent
// process, or opened before privileges are dropped — are handed in with
// Server.Listen, which is asked for every address the config lists.
//
// # Service managers
//
// A Server tells systemd (or any manager that sets $NOTIFY_SOCKET) when it
// is ready, reloading and stopping (Notify). SocketActivation takes the
// listening sockets systemd passes a socket-activated process; its Listen
// method, set as Server.Listen, serves each config address on the socket
// passed for it. See docs/service.md.
//
// # As a container's PID 1
//
// On Linux a program started as the first process of a PID namespace
// calls RunAsInit first: it runs the program again as its only child,
// passes the server's signals on, reaps the orphans the namespace's
// processes leave, and returns the child's exit status. UnderInit tells
// the child (a master refuses a binary upgrade there).
//
// # Logging
//
// Until the config's log is set up, records go to Server.Logger (or
// slog.Default). Start logs what goes wrong except a config that cannot
// be loaded, which it returns as a *LoadError for the caller to show:
// config.Errors read best one per line, FILE:LINE:COL: message. From
// then on the server logs every reload, reopen and shutdown, and the
// components, built with the context Load is given, log there too.
//
// # Memory after a burst
//
// While it runs, a Server checks every 5 s how much free heap the
// process holds that Go has not returned to the OS yet, and when it is
// above 64 MiB and above the live heap — the garbage an attack left —
// returns it at once (debug.FreeOSMemory, logged at Info with the bytes
// returned) rather than over minutes. Outside a burst the check reads
// three runtime/metrics counters and does nothing; it stops with the
// server. See docs/security.md.
package daemon
