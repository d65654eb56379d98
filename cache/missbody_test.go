package cache

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A miss's body is stored whole, and served whole to the requests that
// collapsed onto it, whatever sizes the upstream's pieces come in: each
// piece is flushed and followed by a pause, so that the proxy's reads
// (and the store's copies) end anywhere in a chunk. Chunks given back
// are poisoned, so a byte sent from one given back too early shows.
func TestMissBodyTrickle(t *testing.T) {
	arenaPoison = true
	t.Cleanup(func() { arenaPoison = false }) // after the server's own cleanup
	data := make([]byte, 3*chunkSize+4<<10+1)
	rand.Read(data)
	pieces := []int{1000, 17 << 10, 5, chunkSize, 3000, chunkSize + 1, 4 << 10}
	h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		for i, sent := 0, 0; sent < n; i++ {
			k := min(pieces[i%len(pieces)], n-sent)
			w.Write(data[sent : sent+k])
			w.(http.Flusher).Flush()
			sent += k
			time.Sleep(2 * time.Millisecond)
		}
	})
	for _, size := range []int{chunkSize - 1, chunkSize + 7, 2*chunkSize + 100, len(data)} {
		path := fmt.Sprintf("/%d", size)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body, err := h.try("GET", path)
				switch {
				case err != nil:
					errs <- err
				case resp.StatusCode != 200 || body != string(data[:size]):
					errs <- fmt.Errorf("GET %s: %d, %d bytes (right: %v); want 200, %d bytes", path, resp.StatusCode, len(body), body == string(data[:size]), size)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		resp, body := h.get(t, path)
		if resp.StatusCode != 200 || body != string(data[:size]) || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Errorf("GET %s again: %d, %d bytes (right: %v), Cache-Status %q; want a hit of %d bytes",
				path, resp.StatusCode, len(body), body == string(data[:size]), resp.Header.Get("Cache-Status"), size)
		}
	}
}

// A body the upstream cuts off after part of it was stored is not
// stored: the client's response ends short, and the next request goes
// to the upstream again.
func TestMissBodyCutOff(t *testing.T) {
	data := strings.Repeat("x", 40<<10)
	h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: %d\r\n\r\n", 3*len(data))
		rw.Flush()
		for range 2 {
			time.Sleep(20 * time.Millisecond)
			rw.WriteString(data)
			rw.Flush()
		}
		time.Sleep(20 * time.Millisecond)
	})
	for i := range 2 {
		resp, body, err := h.try("GET", "/cut")
		if err == nil {
			t.Fatalf("GET %d: %d with %d bytes and no error; want the body cut off", i, resp.StatusCode, len(body))
		}
	}
	if n := h.o.n.Load(); n != 2 {
		t.Errorf("the upstream was asked %d times; want 2 (the cut-off body is not stored)", n)
	}
}
