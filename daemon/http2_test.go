//lint:file-ignore SA1019 the test drives x/net/http2's client and Framer on purpose.

package daemon

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
	"golang.org/x/net/http2"
)

// A TLS listener serves HTTP/2 by ALPN unless http2: false; a reload
// sends GOAWAY to an open HTTP/2 connection, whose next request goes on
// a new connection to the new config.
func TestHTTP2Listener(t *testing.T) {
	site := newTLSSite(t)
	site.write(t, `  - {address: "127.0.0.1:0", tls: {cert: a.example.crt, key: a.example.key}}`, "one")
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addr := onlyAddr(t, s)
	tr := &http2.Transport{TLSClientConfig: site.ca.ClientConfig("a.example")}
	defer tr.CloseIdleConnections()
	get := func() (int, string) {
		t.Helper()
		resp, err := (&http.Client{Transport: tr}).Get("https://" + addr.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.ProtoMajor, string(b)
	}
	if proto, body := get(); proto != 2 || body != "one" {
		t.Fatalf("HTTP/%d %q", proto, body)
	}

	cfg := site.ca.ClientConfig("a.example")
	cfg.NextProtos = []string{"h2"}
	c := sluicetest.DialTLS(t, addr.String(), cfg)
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c.R)
	fr.WriteSettings()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if f, err := fr.ReadFrame(); err != nil { // the server's SETTINGS: it serves the connection as HTTP/2
		t.Fatal(err)
	} else if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("first frame %v", f)
	}
	site.write(t, `  - {address: "`+addr.String()+`", tls: {cert: a.example.crt, key: a.example.key}}`, "two")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY after the reload: %v", err)
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			if g.ErrCode != http2.ErrCodeNo {
				t.Errorf("GOAWAY %v", g.ErrCode)
			}
			break
		}
	}
	if proto, body := get(); proto != 2 || body != "two" {
		t.Errorf("after the reload: HTTP/%d %q", proto, body)
	}

	site.write(t, `  - {address: "`+addr.String()+`", tls: {cert: a.example.crt, key: a.example.key}, http2: false}`, "three")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	cfg = site.ca.ClientConfig("a.example")
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if p := sluicetest.Handshake(t, onlyAddr(t, s).String(), cfg).NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("with http2: false ALPN chose %q", p)
	}
}
