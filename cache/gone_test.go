package cache

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A client that goes away while its response streams in does not abort
// the store that a collapsed client waits on: the waiting client gets the
// whole body, and later ones a hit, from one origin request.
func TestClientGoneKeepsStore(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	half := strings.Repeat("a", 64<<10)
	release := make(chan struct{})
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", fmt.Sprint(2*len(half)))
		io.WriteString(w, half)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, strings.ToUpper(half))
	})
	addr := strings.TrimPrefix(h.url, "http://")
	leader, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(leader, "GET /g HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(leader)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		_, body, err := h.try("GET", "/g")
		if err != nil {
			body = err.Error()
		}
		done <- body
	}()
	sluicetest.WaitFor(t, "a second client on the fetch", func() bool { return h.x.waiting("G\x00http://"+addr+"/g") >= 1 })
	leader.Close() // the client that led the fetch leaves
	close(release)
	want := half + strings.ToUpper(half)
	if body := <-done; body != want {
		t.Errorf("the waiting client got %d bytes, want %d", len(body), len(want))
	}
	resp2, body := h.get(t, "/g")
	if body != want || !strings.HasPrefix(resp2.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("after: %d bytes, %s", len(body), resp2.Header.Get("Cache-Status"))
	}
	if got := o.n.Load(); got != 1 {
		t.Errorf("origin saw %d requests, want 1", got)
	}
}

// A body over MaxObjectSize, known from Content-Length or found while it
// streams, passes through whole and is not stored.
func TestMaxObjectSize(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		var o *origin
		h := newHarness(t, Options{MaxObjectSize: 1000}, nil)
		o = h.o
		body := strings.Repeat("x", 5000)
		o.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=600")
			if chunked {
				for i := 0; i < len(body); i += 500 {
					io.WriteString(w, body[i:i+500])
					w.(http.Flusher).Flush()
				}
				return
			}
			io.WriteString(w, body)
		})
		for range 2 {
			resp, got := h.get(t, "/big")
			if got != body {
				t.Errorf("chunked %v: got %d bytes, want %d", chunked, len(got), len(body))
			}
			if strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
				t.Errorf("chunked %v: a body over max_object_size was answered from the store", chunked)
			}
		}
		if got := o.n.Load(); got != 2 || h.x.Size() > 1000 {
			t.Errorf("chunked %v: origin saw %d requests (want 2), store holds %d bytes", chunked, got, h.x.Size())
		}
	}
}

// An HTTP/1.0 request with Pragma: no-cache and no Cache-Control is
// forwarded; Pragma is ignored when Cache-Control is there.
func TestPragmaHTTP10(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{}, nil)
	o = h.o
	o.set(respond(&o, 200, "p", "Cache-Control: max-age=600"))
	h.get(t, "/pr")
	addr := strings.TrimPrefix(h.url, "http://")
	send := func(fields string) string {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fmt.Fprintf(nc, "GET /pr HTTP/1.0\r\nHost: %s\r\n%s\r\n", addr, fields)
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Cache-Status")
	}
	if cs := send("Pragma: no-cache\r\n"); !strings.HasPrefix(cs, "Sluice; fwd=request") || o.n.Load() != 2 {
		t.Errorf("Pragma: no-cache: %q, origin %d", cs, o.n.Load())
	}
	if cs := send("Pragma: no-cache\r\nCache-Control: max-stale\r\n"); !strings.HasPrefix(cs, "Sluice; hit") {
		t.Errorf("Pragma with Cache-Control: %q", cs)
	}
}
