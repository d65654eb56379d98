//go:build unix

//lint:file-ignore SA1019 the test drives x/net/http2's Framer on purpose.

package cgi

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// h2Env sends one GET over HTTP/2 in cleartext (prior knowledge) with
// the given regular fields after :method, :scheme, :authority a.test and
// :path, and returns the program's output, or reset true if the stream
// was reset instead.
func h2Env(t *testing.T, addr string, fields ...string) (body string, reset bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(sluicetest.RawTimeout))
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	all := append([]string{":method", "GET", ":scheme", "http", ":authority", "a.test", ":path", "/"}, fields...)
	for i := 0; i+1 < len(all); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: all[i], Value: all[i+1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			return out.String(), true
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		case *http2.DataFrame:
			out.Write(f.Data())
			if f.StreamEnded() {
				return out.String(), false
			}
		}
	}
}

// A program's HTTP_HOST over HTTP/2 is the host the request was routed
// by: a request with a second, hostile host field is refused before any
// program runs (finding 3 of issue 35: the program saw
// "HTTP_HOST=evil.test/<x> @y, a.test"), and one host comes through.
func TestEnvHTTP2Host(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec env\n")
	g, _ := newGateway(t, Options{Script: script})
	addr := sluicetest.NewServer(t, pipe.Handler(g), sluicetest.HTTP2()).Addr

	body, reset := h2Env(t, addr, "host", "evil.test/<x> @y", "host", "a.test")
	if !reset || strings.Contains(body, "evil") {
		t.Errorf("two host fields: reset %v, the program said %q", reset, body)
	}
	body, reset = h2Env(t, addr, "host", "a.test", "cookie", "a=1", "cookie", "b=2")
	env := cgiEnvMap(body)
	if reset || env["HTTP_HOST"] != "a.test" || env["HTTP_COOKIE"] != "a=1; b=2" || env["SERVER_PROTOCOL"] != "HTTP/2.0" {
		t.Errorf("one host field: reset %v, HTTP_HOST %q, HTTP_COOKIE %q, SERVER_PROTOCOL %q", reset, env["HTTP_HOST"], env["HTTP_COOKIE"], env["SERVER_PROTOCOL"])
	}
}
