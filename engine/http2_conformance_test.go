//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// h2spec, the HTTP/2 conformance suite (RFC 9113 and RFC 7541), passes
// every case against the server over TLS, and over h2c every case but
// one: an h2c listener serves HTTP/1.1 too, so a connection that opens
// with something other than the HTTP/2 preface is an HTTP/1.1 request,
// answered (400) rather than cut.
func TestHTTP2Conformance(t *testing.T) {
	h2spec := sluicetest.NeedTool(t, "h2spec", "go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible")
	for _, name := range []string{"tls", "h2c"} {
		t.Run(name, func(t *testing.T) {
			var ca *sluicetest.CA
			args := []string{"-o", "5"}
			if name == "tls" {
				ca = sluicetest.NewCA(t)
				args = append(args, "-t", "-k")
			}
			_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteString("conformance\n")
			}), engine.Limits{})
			host, port, _ := strings.Cut(addr, ":")
			out, err := exec.Command(h2spec, append(args, "-h", host, "-p", port)...).CombinedOutput()
			failed := false
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "×") && (name == "tls" || !strings.Contains(line, "Sends invalid connection preface")) {
					failed = true
				}
			}
			if name == "h2c" && !strings.Contains(string(out), "145 tests, 144 passed, 0 skipped, 1 failed") {
				failed = true // stopped early, or fewer cases
			}
			if failed || err != nil && name == "tls" {
				t.Errorf("h2spec: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Log(lines[len(lines)-1])
		})
	}
}

// rawH2 sends a HEADERS frame with fields (pseudo-header fields included)
// on stream 1 and returns the first frame that answers it: RST_STREAM,
// HEADERS or GOAWAY.
func rawH2(t *testing.T, addr string, ca *sluicetest.CA, fields ...string) http2.Frame {
	t.Helper()
	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var got http2.Frame
	h.readUntil("the answer", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			got = f
		case *http2.MetaHeadersFrame:
			got = f
		}
		return got != nil
	})
	return got
}

// A malformed request (RFC 9113 §8.1.1) is reset with PROTOCOL_ERROR, not
// answered: a connection-specific field, TE other than "trailers", an
// uppercase name, a pseudo-header after a regular field, a missing or
// repeated pseudo-header, :authority and Host that disagree.
func TestHTTP2MalformedRequests(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	get := []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", "/"}
	for _, tt := range []struct {
		name   string
		fields []string
	}{
		{"connection field", append(get, "connection", "keep-alive")},
		{"keep-alive field", append(get, "keep-alive", "timeout=5")},
		{"TE gzip", append(get, "te", "gzip")},
		{"uppercase name", append(get, "X-Upper", "1")},
		{"pseudo after regular", []string{":method", "GET", ":scheme", "https", "x-a", "1", ":path", "/"}},
		{"no :path", []string{":method", "GET", ":scheme", "https", ":authority", "x"}},
		{"empty :path", []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", ""}},
		{"two :method", append(get, ":method", "GET")},
		{"unknown pseudo", append(get, ":status", "200")},
		{"host disagrees", append(get, "host", "y")},
		{"value with LF", append(get, "x-a", "1\n2")},
		{"content-length without DATA", append(get, "content-length", "3")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := rawH2(t, addr, ca, tt.fields...)
			rst, ok := f.(*http2.RSTStreamFrame)
			if !ok || rst.ErrCode != http2.ErrCodeProtocol {
				t.Errorf("answered %v, want RST_STREAM PROTOCOL_ERROR", f)
			}
		})
	}
	// TE: trailers is allowed, and the engine's target rules apply to
	// :path as to a request line.
	for _, tt := range []struct {
		name, path, status string
	}{
		{"TE trailers", "/", "200"},
		{"encoded slash", "/a%2fb", "400"},
		{"above the root", "/../etc/passwd", "400"},
		{"absolute form", "https://x/", "400"},
		{"space", "/a b", "400"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := rawH2(t, addr, ca, ":method", "GET", ":scheme", "https", ":authority", "x", ":path", tt.path, "te", "trailers")
			m, ok := f.(*http2.MetaHeadersFrame)
			if !ok || m.PseudoValue("status") != tt.status {
				t.Errorf("answered %v, want status %s", f, tt.status)
			}
		})
	}
}

// A handler's connection-specific fields (from a CGI program or a
// proxied response, say) are not sent on HTTP/2, where a client must
// treat them as malformed; "Connection: close" does not end the
// connection, which other streams share.
func TestHTTP2ConnectionFields(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		h := w.Header()
		h.Set("Connection", "close")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Connection", "keep-alive")
		h.Set("Upgrade", "h2c")
		h.Set("X-End", "1")
		w.WriteString("ok")
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	for _, id := range []uint32{1, 3} {
		h.get(id, "/")
		h.readUntil("the response", func(f http2.Frame) bool {
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v", f.ErrCode)
			case *http2.MetaHeadersFrame:
				var names []string
				for _, hf := range f.RegularFields() {
					names = append(names, hf.Name)
				}
				if got := strings.Join(names, " "); strings.Contains(got, "connection") || strings.Contains(got, "keep-alive") || strings.Contains(got, "upgrade") || !strings.Contains(got, "x-end") {
					t.Errorf("stream %d: fields %s", id, got)
				}
			case *http2.DataFrame:
				return f.StreamEnded()
			}
			return false
		})
	}
}

// The server does not announce extended CONNECT (RFC 8441), so a
// browser opens WebSockets (any Upgrade) over HTTP/1.1, where the proxy
// tunnels them, rather than as HTTP/2 streams no component serves.
func TestHTTP2NoExtendedConnect(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxStreams: 7})
	h := dialH2(t, ca, addr)
	h.readUntil("the server's SETTINGS", func(f http2.Frame) bool {
		s, ok := f.(*http2.SettingsFrame)
		if !ok || s.IsAck() {
			return false
		}
		if v, ok := s.Value(http2.SettingEnableConnectProtocol); ok && v != 0 {
			t.Errorf("SETTINGS_ENABLE_CONNECT_PROTOCOL = %d", v)
		}
		if v, _ := s.Value(http2.SettingMaxConcurrentStreams); v != 7 {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want MaxStreams 7", v)
		}
		if v, _ := s.Value(http2.SettingMaxHeaderListSize); v != engine.DefaultMaxHeaderBytes+320 {
			t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE = %d, want MaxHeaderBytes + 320", v)
		}
		return true
	})
}
