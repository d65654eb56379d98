package sluicetest_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// tlsHello answers with the protocol and the connection's TLS state as
// the handler sees them.
var tlsHello = engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
	if r.TLS == nil {
		io.WriteString(w, "no TLS")
		return
	}
	fmt.Fprintf(w, "%s alpn=%s %s", r.Proto(), r.TLS.NegotiatedProtocol, tls.VersionName(r.TLS.Version))
})

// A TLS server answers over TLS at an https URL, to its Client and to a
// raw connection from Dial, with a certificate its CA issued for its
// address; the options choose the CA, the certificate, the config and
// HTTP/2.
func TestNewTLSServer(t *testing.T) {
	ca := sluicetest.NewCA(t)
	for _, tt := range []struct {
		name string
		opts func(t *testing.T) []sluicetest.Option
		// want is the body Client gets (over HTTP/1.1 it offers no ALPN
		// protocol, as net/http's client does with a TLS config of its
		// own); "" to skip the requests.
		want string
		// check, if set, checks more.
		check func(t *testing.T, s *sluicetest.Server)
	}{
		{"defaults", nil, "HTTP/1.1 alpn= TLS 1.3", func(t *testing.T, s *sluicetest.Server) {
			if s.CA == nil || s.CA == ca {
				t.Errorf("CA %p: want one of the server's own", s.CA)
			}
			if !strings.HasPrefix(s.URL, "https://127.0.0.1:") {
				t.Errorf("URL %q", s.URL)
			}
		}},
		{"HTTP2", func(*testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.HTTP2()}
		}, "HTTP/2.0 alpn=h2 TLS 1.3", nil},
		{"CertificateFrom", func(*testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.CertificateFrom(ca)}
		}, "HTTP/1.1 alpn= TLS 1.3", func(t *testing.T, s *sluicetest.Server) {
			if s.CA != ca {
				t.Error("the server's CA is not the one given")
			}
			c, err := tls.Dial("tcp", s.Addr, ca.ClientConfig("127.0.0.1"))
			if err != nil {
				t.Fatalf("a client trusting the given CA: %v", err)
			}
			c.Close()
		}},
		{"Certificate", func(t *testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.CertificateFrom(ca), sluicetest.Certificate(ca.Issue(t, "other.example"))}
		}, "", func(t *testing.T, s *sluicetest.Server) {
			if c, err := s.Dial(); err == nil {
				c.Close()
				t.Error("the certificate for other.example passed as one for 127.0.0.1")
			}
			c, err := tls.Dial("tcp", s.Addr, ca.ClientConfig("other.example"))
			if err != nil {
				t.Fatalf("dialing as other.example: %v", err)
			}
			c.Close()
		}},
		{"ConfigureTLS", func(*testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.ConfigureTLS(func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })}
		}, "HTTP/1.1 alpn= TLS 1.2", nil},
		{"unix", func(t *testing.T) []sluicetest.Option {
			return []sluicetest.Option{sluicetest.Listen("unix", filepath.Join(t.TempDir(), "s"))}
		}, "", func(t *testing.T, s *sluicetest.Server) {
			if s.URL != "" {
				t.Errorf("URL %q on a Unix socket", s.URL)
			}
			// Over a Unix socket the certificate is for "localhost".
			if _, body := s.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); body != "HTTP/1.1 alpn= TLS 1.3" {
				t.Errorf("got %q", body)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []sluicetest.Option
			if tt.opts != nil {
				opts = tt.opts(t)
			}
			s := sluicetest.NewTLSServer(t, tlsHello, opts...)
			if s.TLS == nil || s.ClientConfig() == nil {
				t.Fatal("a TLS server without TLS or ClientConfig")
			}
			if tt.want != "" {
				resp, err := s.Client().Get(s.URL + "/")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != tt.want {
					t.Errorf("Client: %q, want %q", body, tt.want)
				}
				// Dial offers no ALPN protocol: raw bytes are HTTP/1.1.
				c, err := s.Dial()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, ok := c.(*tls.Conn); !ok {
					t.Errorf("Dial returned a %T", c)
				}
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
				if _, body := sluicetest.ReadResponse(t, bufio.NewReader(c), "GET"); !strings.HasPrefix(body, "HTTP/1.1 alpn= ") {
					t.Errorf("Dial: %q", body)
				}
			}
			if tt.check != nil {
				tt.check(t, s)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// A server without TLS has no CA, no TLS config and no ClientConfig, and
// its Client is the package's.
func TestNewServerHasNoTLS(t *testing.T) {
	s := sluicetest.NewServer(t, tlsHello)
	if s.CA != nil || s.TLS != nil || s.ClientConfig() != nil || s.Client() != sluicetest.Client {
		t.Errorf("CA %v, TLS %v, ClientConfig %v, Client %p", s.CA, s.TLS, s.ClientConfig(), s.Client())
	}
	if _, body := sluicetest.Get(t, s.URL); body != "no TLS" {
		t.Errorf("got %q", body)
	}
}

// HTTP2 on a server without TLS serves HTTP/2 to a client with prior
// knowledge (its first frame answering the preface is SETTINGS) and
// HTTP/1.1 to Client.
func TestHTTP2Cleartext(t *testing.T) {
	s := sluicetest.NewServer(t, tlsHello, sluicetest.HTTP2())
	if _, body := sluicetest.Get(t, s.URL); body != "no TLS" {
		t.Errorf("HTTP/1.1: %q", body)
	}
	c, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(sluicetest.RawTimeout))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	head := make([]byte, 9)
	if _, err := io.ReadFull(c, head); err != nil {
		t.Fatal(err)
	}
	if head[3] != 0x4 { // the frame type
		t.Errorf("first frame %x, want SETTINGS", head)
	}
}
