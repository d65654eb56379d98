package cache

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/pipe"
)

// The memory budget holds under a churn of distinct keys: 100,000 (10,000
// with -short) requests for distinct URLs, pipelined over 4 keep-alive
// connections to a cache of 1 MB before a source setting max-age, leave
// the store within its budget and its oldest keys evicted.
func TestBudgetUnderChurn(t *testing.T) {
	if *everyOnDisk {
		t.Skip("the memory budget: a disk store's is package disk's")
	}
	const budget = 1 << 20
	keys := 100_000
	if testing.Short() {
		keys = 10_000
	}
	maxAge := pipe.Pipe(func(c *pipe.Conn) bool {
		c.Header().Set("Cache-Control", "max-age=600")
		c.Header().Set("Content-Type", "text/plain")
		c.SetContent(func(w pipe.Writer) error {
			_, err := w.Write([]byte("body of " + string(c.Request.Query)))
			return err
		})
		return true
	})
	h := newHarnessWith(t, Options{Size: budget}, nil, maxAge)
	addr := strings.TrimPrefix(h.url, "http://")
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			n := keys / conns
			go func() {
				bw := bufio.NewWriter(nc)
				for i := range n {
					fmt.Fprintf(bw, "GET /churn?k=%d-%d HTTP/1.1\r\nHost: %s\r\n\r\n", c, i, addr)
				}
				bw.Flush()
			}()
			br := bufio.NewReader(nc)
			for i := range n {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf("body of k=%d-%d", c, i); string(b) != want {
					errs <- fmt.Errorf("got %q, want %q", b, want)
					return
				}
				if i%1000 == 0 && h.x.Size() > budget {
					errs <- fmt.Errorf("after %d requests the store holds %d bytes, over %d", i, h.x.Size(), budget)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	size, n := h.x.Size(), h.x.Len()
	if size > budget || n >= keys/2 || n == 0 {
		t.Errorf("store: %d bytes in %d entries after %d keys, budget %d", size, n, keys, budget)
	}
	if ev := h.x.store.Evictions(); ev < uint64(keys-n) {
		t.Errorf("%d evictions, want at least %d", ev, keys-n)
	}
	st := h.x.Stats()
	if st.Stored != uint64(keys) || st.Misses != uint64(keys) {
		t.Errorf("stats %+v, want %d stored misses", st, keys)
	}
	// A new key is stored and answered from the store; the first is gone.
	h.get(t, "/churn?k=last")
	if resp, _ := h.get(t, "/churn?k=last"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("newest key: %s", resp.Header.Get("Cache-Status"))
	}
	if resp, _ := h.get(t, "/churn?k=0-0"); strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("oldest key still stored")
	}
}

// MaxKeys bounds the number of entries.
func TestMaxKeys(t *testing.T) {
	h := newHarnessWith(t, Options{Size: 1 << 20, MaxKeys: 10}, nil, pipe.Pipe(func(c *pipe.Conn) bool {
		c.Header().Set("Cache-Control", "max-age=600")
		return true
	}))
	for i := range 30 {
		h.get(t, fmt.Sprintf("/m%d", i))
	}
	if n := h.x.Len(); n > 10 {
		t.Errorf("%d entries, max_keys 10", n)
	}
}

// An entry's ready channel, made only for whoever waits before it is
// ready, is closed when it is published or abandoned, and one asked for
// afterwards is closed already.
func TestEntryReady(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		e := newEntry()
		early := e.readyChan()
		select {
		case <-early:
			t.Fatal("ready before it was published")
		default:
		}
		woke := make(chan struct{})
		go func() {
			<-e.readyChan()
			close(woke)
		}()
		if abandon {
			e.abandon()
		} else {
			e.publish(&meta{status: 200, length: 0}, 1<<20, nil)
		}
		<-early
		<-woke
		select {
		case <-e.readyChan():
		default:
			t.Error("a channel asked for after it was ready is not closed")
		}
		if !e.isReady.Load() || e.abandoned.Load() != abandon {
			t.Errorf("abandon %v: isReady %v, abandoned %v", abandon, e.isReady.Load(), e.abandoned.Load())
		}
		late := newEntry()
		late.abandon()
		select {
		case <-late.readyChan():
		default:
			t.Error("the channel of an entry abandoned before anyone waited is not closed")
		}
	}
}
