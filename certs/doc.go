// Package certs is the certificates of a server's TLS endpoints: the
// TLS configs they serve, the certificate chosen by the name a client
// asks for (SNI), certificates obtained and renewed automatically by
// ACME, OCSP responses stapled to the handshake, and new certificates
// taken in by a reload without closing a connection. Package daemon
// serves its TLS listeners with it, and package daemon/supervisor's
// master obtains its workers' ACME certificates with it; it knows
// nothing of listeners or of HTTP, so that any transport (TCP, QUIC)
// can serve what it hands out.
//
// # Endpoints and sets
//
// An Endpoint is one TLS endpoint: Endpoint.TLSConfig makes the
// *tls.Config it serves (TLS 1.2 and 1.3, the ECDHE and AEAD suites of
// CipherSuites, ALPN as the caller asks plus "acme-tls/1", crypto/tls's
// session tickets), whose GetCertificate reads the endpoint's Set of the
// moment. A Set is the certificates of one config's tls section, made by
// Manager.Set and never changed; a reload stores a new one
// (Endpoint.Store) for the handshakes that follow, while open
// connections carry on. Both are safe for concurrent use: a reload may
// store a Set while handshakes read the one before.
//
// # The Manager
//
// A server keeps one Manager across reloads. For each config it asks the
// Manager for each TLS endpoint's Set and for the Challenges its plain
// endpoints answer; it calls Start once it serves, Retain after each
// reload (which drops what the old config alone used) and Close at
// shutdown. The Manager's methods are safe for concurrent use.
//
// # ACME
//
// A tls section with acme takes its certificates from a
// golang.org/x/crypto/acme/autocert Manager: one per distinct acme
// section (config.ACME.Key), kept by the Manager across reloads, which
// obtains them in the background from Start on, renews them a third of
// their lifetime before they expire, and answers TLS-ALPN-01 in
// GetCertificate and HTTP-01 through Challenges (under ChallengePath).
// Certificates and the account key are kept in the section's data
// directory. With workers, one process (an Issuer) obtains them and the
// others, whose Managers are cache-only, serve them from the data
// directory; an Owner is who that directory is given to when the
// issuing process runs as root.
//
// # OCSP stapling
//
// Certificates that name an OCSP responder and carry their issuer are
// served with the responder's answer stapled (tls.Certificate.OCSPStaple),
// fetched and refreshed in the background for as long as a config or an
// acme section uses them (an acme section's until it serves the
// certificate's renewal); ocsp_stapling: false turns it off. Only a Good,
// current response is stapled.
package certs
