package certs_test

import (
	"crypto/tls"
	"log"
	"log/slog"
	"net"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/config"
)

// A TLS listener for the first listen entry of a config file, as a
// server makes one; a reload stores the new config's Set in the same
// Endpoint, and the listener serves the new certificates from the next
// handshake on.
func Example() {
	cfg, err := config.Load("site.yaml")
	if err != nil {
		log.Fatal(err)
	}
	m := certs.NewManager(slog.Default(), false)
	defer m.Close()

	a := cfg.Listen[0]
	var e certs.Endpoint
	e.Store(m.Set(cfg.ListenOptions[a].TLS, cfg))
	ln, err := net.Listen("tcp", a.Addr)
	if err != nil {
		log.Fatal(err)
	}
	m.Start(cfg) // obtain the acme sections' certificates, if any
	ln = tls.NewListener(ln, e.TLSConfig("http/1.1"))
	defer ln.Close()

	// On reload:
	next, err := config.Load("site.yaml")
	if err != nil {
		log.Fatal(err)
	}
	e.Store(m.Set(next.ListenOptions[a].TLS, next))
	m.Retain(next, cfg)
}
