package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Values of Options.Transport.
const (
	TransportHTTP  = "http"  // HTTP/1.1 over TCP or a Unix socket (the default for http:// upstreams)
	TransportHTTPS = "https" // HTTP/1.1 over TLS (the default for https:// upstreams)
	TransportH2C   = "h2c"   // HTTP/2 over TCP, with prior knowledge
	TransportH2    = "h2"    // HTTP/2 over TLS, chosen by ALPN
)

// TLSOptions configures TLS to the upstreams (Options.TLS), for the
// transports https and h2. The zero value verifies each upstream's
// certificate against the system's roots, for the host name of its URL,
// and presents no client certificate.
type TLSOptions struct {
	// CA is a PEM file of the certificates the upstreams' chains are
	// verified against, instead of the system's roots (a private CA).
	CA string `yaml:"ca"`

	// Cert is a PEM file of a client certificate chain, presented to
	// upstreams that ask for one (mutual TLS), with Key: both or neither.
	Cert string `yaml:"cert"`

	// Key is the PEM file of Cert's private key.
	Key string `yaml:"key"`

	// ServerName is the name sent in SNI and verified in the upstream's
	// certificate, for every upstream; by default each upstream's host
	// from its URL (an IP address is then verified as one, and not
	// sent in SNI).
	ServerName string `yaml:"server_name"`

	// InsecureSkipVerify turns verification of the upstreams'
	// certificates off: anyone on the path to an upstream can then read
	// and change the traffic. sluice check warns about it. For tests
	// against self-signed upstreams; a private CA (CA) is the way to
	// trust one.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// set reports whether any option of t is set.
func (t *TLSOptions) set() bool { return *t != TLSOptions{} }

// tlsSessions is how many TLS sessions a Proxy's cache keeps for
// resumption: one per upstream name is enough, and a few over.
const tlsSessions = 256

// tlsConfig returns the client TLS configuration of t for the ALPN
// protocol proto ("http/1.1" or "h2"): the CA, the client certificate,
// a session cache shared by every connection (resumed handshakes on a
// pool's new connections), TLS 1.2 at least. ServerName is left for
// hostConfig.
func (t *TLSOptions) tlsConfig(proto string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         []string{proto},
		ClientSessionCache: tls.NewLRUClientSessionCache(tlsSessions),
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("proxy: tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxy: tls ca %q: no PEM certificate in it: want the CA's certificate, as -----BEGIN CERTIFICATE----- blocks", t.CA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.Cert != "" && t.Key != "":
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("proxy: tls cert %q and key %q: %w", t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case t.Cert != "" || t.Key != "":
		return nil, errors.New("proxy: tls: cert and key go together: set both (PEM files of the client certificate and its key) or neither")
	}
	if t.ServerName != "" && strings.ContainsAny(t.ServerName, "/: ") {
		return nil, fmt.Errorf("proxy: tls server_name %q: want a host name, without port or scheme", t.ServerName)
	}
	return cfg, nil
}

// hostConfig returns base for an upstream at addr (host:port): with
// ServerName t's, or addr's host.
func (t *TLSOptions) hostConfig(base *tls.Config, addr string) *tls.Config {
	cfg := base.Clone()
	cfg.ClientSessionCache = base.ClientSessionCache // shared (Clone shares it too)
	cfg.ServerName = t.ServerName
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	return cfg
}

// handshake runs the TLS handshake over nc, by deadline, and returns the
// TLS connection, or closes nc and returns an error that says what to
// do (tlsAdvice).
func handshake(nc net.Conn, cfg *tls.Config, deadline time.Time) (*tls.Conn, error) {
	tc := tls.Client(nc, cfg)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, tlsAdvice(err, cfg)
	}
	if want := cfg.NextProtos; len(want) == 1 && want[0] == "h2" && tc.ConnectionState().NegotiatedProtocol != "h2" {
		tc.Close()
		return nil, &TLSError{Err: errors.New("the upstream did not choose h2 by ALPN"), Advice: "it does not serve HTTP/2 over TLS: use transport https"}
	}
	return tc, nil
}

// TLSError is a failed TLS handshake with an upstream: Err, and Advice,
// what to change in the config (or on the upstream) to fix it.
type TLSError struct {
	Err    error
	Advice string
}

func (e *TLSError) Error() string { return "TLS handshake: " + e.Err.Error() + ": " + e.Advice }

func (e *TLSError) Unwrap() error { return e.Err }

// tlsAdvice wraps a handshake's err in a TLSError whose advice names
// the option that fixes it.
func tlsAdvice(err error, cfg *tls.Config) error {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknown):
		return &TLSError{err, "the upstream's certificate is not signed by a trusted authority: name the CA that signed it in tls.ca (a PEM file)"}
	case errors.As(err, &hostname):
		names := ""
		if c := hostname.Certificate; c != nil {
			names = " (it holds " + strings.Join(append(append([]string{}, c.DNSNames...), ipStrings(c.IPAddresses)...), ", ") + ")"
		}
		return &TLSError{err, "the upstream's certificate is not for " + cfg.ServerName + names + ": set tls.server_name to a name it holds, or fix the upstream's URL"}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return &TLSError{err, "the upstream's certificate has expired or is not yet valid: renew it on the upstream (or check this machine's clock)"}
	case errors.As(err, &invalid):
		return &TLSError{err, "the upstream's certificate cannot be used: check its chain and key usage on the upstream"}
	case strings.Contains(err.Error(), "no application protocol"):
		return &TLSError{err, "the upstream offers no protocol the transport speaks by ALPN (" + strings.Join(cfg.NextProtos, ", ") + "): transport h2 needs an upstream serving HTTP/2 over TLS, transport https one serving HTTP/1.1"}
	case errors.As(err, &record):
		return &TLSError{err, "the upstream does not speak TLS: use an http:// upstream (transport http or h2c)"}
	}
	if isTimeout(err) {
		return err // a timeout, told as one
	}
	return &TLSError{err, "check the upstream's TLS setup and tls options (ca, cert, key, server_name)"}
}

func ipStrings(ips []net.IP) []string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return s
}
