package engine

import (
	"io"
	"strings"
	"testing"
	"time"
)

// refusalSeen is the part of a Refusal a test compares, copied in the hook.
type refusalSeen struct {
	status    int
	line      string
	method    string // "<nil>" when the request line was not read
	userAgent string
	bodyBytes int64 // the tables leave it 0: the length of the body received
	remote    bool  // RemoteAddr was set
}

// refusalServer starts a server whose OnRefused hook copies each refusal
// into the returned channel.
func refusalServer(t *testing.T, lim Limits) (string, chan refusalSeen) {
	t.Helper()
	seen := make(chan refusalSeen, 10)
	s := &Server{Handler: echo, Limits: lim, OnRefused: func(rf *Refusal) {
		r := rf.Request
		method := "<nil>"
		if r.Method != nil {
			method = string(r.Method)
		}
		seen <- refusalSeen{rf.Status, string(rf.Line), method, string(r.Header("User-Agent")),
			rf.BodyBytes, r.RemoteAddr != nil}
	}}
	return startServer(t, s), seen
}

// Every request the engine answers itself reaches OnRefused, with its raw
// request line and what was parsed of its head (issue 14, finding 8:
// refused requests never reached the access log).
func TestOnRefused(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want refusalSeen
	}{
		{"TLS handshake", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
			refusalSeen{400, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", "<nil>", "", 0, true}},
		{"control byte in target", "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n",
			refusalSeen{400, "GET /a\x01b HTTP/1.1", "GET", "", 0, true}},
		{"bad field after User-Agent", "\r\nGET / HTTP/1.1\r\nHost: a\r\nUser-Agent: probe/1\r\nBad Field\r\n\r\n",
			refusalSeen{400, "GET / HTTP/1.1", "GET", "probe/1", 0, true}},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
			refusalSeen{505, "GET / HTTP/2.0", "<nil>", "", 0, true}},
		{"target too long", "GET /" + strings.Repeat("a", 300) + " HTTP/1.1\r\nHost: a\r\n\r\n",
			refusalSeen{414, "GET /" + strings.Repeat("a", 300) + " HTTP/1.1", "<nil>", "", 0, true}},
		{"unknown method", "BREW /pot HTTP/1.1\r\nHost: a\r\nUser-Agent: tea\r\nConnection: close\r\n\r\n",
			refusalSeen{501, "BREW /pot HTTP/1.1", "BREW", "tea", 0, true}},
		{"unknown method, HTTP/1.0", "BREW /pot HTTP/1.0\r\n\r\n",
			refusalSeen{501, "BREW /pot HTTP/1.0", "BREW", "", 0, true}},
		{"declared body too large", "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n",
			refusalSeen{413, "POST /up HTTP/1.1", "POST", "", 0, true}},
		{"HEAD with a body too large", "HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n",
			refusalSeen{413, "HEAD / HTTP/1.1", "HEAD", "", 0, true}},
		{"unknown expectation", "PUT /x HTTP/1.1\r\nHost: a\r\nExpect: tea\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
			refusalSeen{417, "PUT /x HTTP/1.1", "PUT", "", 0, true}},
	}
	addr, seen := refusalServer(t, Limits{MaxTargetBytes: 256, MaxBodyBytes: 1000})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := exchange(t, addr, tt.raw)
			if statusOf(out) != tt.want.status {
				t.Fatalf("response %q, want status %d", out, tt.want.status)
			}
			tt.want.bodyBytes = int64(len(out) - strings.Index(out, "\r\n\r\n") - 4) // the body received
			select {
			case got := <-seen:
				if got != tt.want {
					t.Errorf("refusal of %q:\n got %+v\nwant %+v", tt.raw, got, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no refusal reported for %q", tt.raw)
			}
		})
	}
	// A request the handler answers is not a refusal, nor is a bad one's
	// silent end (a client that leaves mid-head gets no response); a
	// refusal after a pipelined request reports its own line.
	exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	exchange(t, addr, "GET / HTTP/1.1\r\nHo")
	out := exchange(t, addr, "GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\nBad\r\n\r\n")
	if !strings.Contains(out, "200 OK") || !strings.Contains(out, "400 Bad Request") {
		t.Fatalf("got %q, want 200 then 400", out)
	}
	if got := <-seen; got.status != 400 || got.line != "GET /second HTTP/1.1" {
		t.Errorf("after an answered request and an abandoned one, next refusal %+v", got)
	}
}

// A head that does not arrive within HeaderTimeout is a refusal too (408).
func TestOnRefusedHeaderTimeout(t *testing.T) {
	addr, seen := refusalServer(t, Limits{HeaderTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nUser-Agent: dribble\r\nX-")
	out, _ := io.ReadAll(c)
	if statusOf(string(out)) != 408 {
		t.Fatalf("got %q, want 408", out)
	}
	body := len(out) - strings.Index(string(out), "\r\n\r\n") - 4
	want := refusalSeen{408, "GET /slow HTTP/1.1", "GET", "dribble", int64(body), true}
	if got := <-seen; got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
