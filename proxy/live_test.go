package proxy

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// counted starts n upstreams over transport (http or h2c) that answer
// with their index and count the requests they get.
func counted(t *testing.T, n int, transport string) ([]string, []*atomic.Int64) {
	t.Helper()
	hits := make([]*atomic.Int64, n)
	urls := make([]string, n)
	for i := range n {
		hits[i] = new(atomic.Int64)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			fmt.Fprint(w, i)
		})
		if transport == TransportH2C {
			urls[i], _ = h2cUpstream(t, 0, h)
		} else {
			_, u := upstreams(t, 1, func(int) http.Handler { return h })
			urls[i] = u[0]
		}
	}
	return urls, hits
}

// Under load from many clients, the proxy's set of upstreams is changed
// in a loop — hosts added, removed, drained and re-weighted, through the
// live set its name registers — and no request fails; a host out of the
// set or draining gets no request started after the change returned;
// and a host marked down stays down across every change.
func TestLiveSetUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		transport, policy string
		maxConns          int // requests past it wait in the queue
	}{
		{TransportHTTP, RoundRobin, 0},
		{TransportHTTP, RoundRobin, 1},
		{TransportHTTP, LeastConn, 0},
		{TransportHTTP, Hash, 0},
		{TransportH2C, RandomTwo, 0},
	} {
		t.Run(fmt.Sprintf("%s/%s/max_conns=%d", tc.transport, tc.policy, tc.maxConns), func(t *testing.T) {
			testLiveSetUnderLoad(t, tc.transport, tc.policy, tc.maxConns)
		})
	}
}

func testLiveSetUnderLoad(t *testing.T, transport, policy string, maxConns int) {
	const nHosts = 6
	urls, hits := counted(t, nHosts, transport)
	name := fmt.Sprintf("live-load-%s-%s-%d", transport, policy, maxConns)
	opts := Options{Name: name, Upstreams: urls[:3], Transport: transport, Policy: policy, MaxConns: maxConns,
		Passive: PassiveHealth{Failures: 1, Window: time.Hour, DownFor: time.Hour}}
	if policy == Hash {
		opts.HashKey = "path"
	}
	srv, p := front(t, opts)
	set, ok := upstream.LookupSet(name)
	if !ok {
		t.Fatalf("no live set %q", name)
	}
	hostOf := func(i int) *host {
		for _, h := range p.grp.Hosts() {
			if h.Name == urls[i] {
				return h
			}
		}
		return nil
	}
	// Host 1 is marked down; it stays in the set, and down, throughout.
	if !hostOf(1).Failed(time.Now(), &p.passive) {
		t.Fatal("host 1 not marked down")
	}
	downHits := hits[1].Load()

	stop := make(chan struct{})
	var failed, served atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(fmt.Sprintf("%s/%d/%d", srv.URL, c, k))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, body))
					continue
				}
				served.Add(1)
			}
		}()
	}

	// out[i] >= 0: host i is out of the set or draining since it had
	// that many hits, all its requests in flight then finished.
	out := make([]int64, nHosts)
	for i := range out {
		out[i] = -1
	}
	// quiesce records the hosts not taking requests in the set now,
	// once their requests in flight have finished.
	// before holds each host's *Host before a change: one that left the
	// set may still have requests in flight.
	before := map[int]*host{}
	quiesce := func() {
		st := set.State()
		taking := map[string]bool{}
		for _, h := range st.Hosts {
			if !h.Draining {
				taking[h.Name] = true
			}
		}
		for i := range nHosts {
			if i == 1 {
				continue
			}
			if taking[urls[i]] {
				if out[i] >= 0 {
					out[i] = -1
				}
				continue
			}
			if out[i] < 0 {
				sluicetest.WaitFor(t, "the requests in flight to a host gone to finish", func() bool {
					h := before[i]
					return h == nil || h.InFlight() == 0
				})
				out[i] = hits[i].Load()
			}
		}
	}
	check := func() {
		for i := range nHosts {
			if out[i] >= 0 && hits[i].Load() != out[i] {
				t.Fatalf("host %d got %d requests while out of the set or draining", i, hits[i].Load()-out[i])
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	quiesce()
	for round := range 60 {
		// Make a set: host 1 (down) and at least one other host taking
		// requests, and some of the others, weighted, some draining.
		var specs []HostSpec
		specs = append(specs, HostSpec{Name: urls[1], Weight: 1 + rng.IntN(5)})
		taking := 0
		for i := range nHosts {
			if i == 1 || rng.IntN(3) == 0 {
				continue
			}
			drain := rng.IntN(4) == 0
			if !drain {
				taking++
			}
			specs = append(specs, HostSpec{Name: urls[i], Weight: 1 + rng.IntN(5), Drain: drain})
		}
		if taking == 0 {
			specs = append(specs, HostSpec{Name: urls[0]})
			if len(specs) > 2 && specs[1].Name == urls[0] {
				specs = specs[:len(specs)-1]
				specs[1].Drain = false
			}
		}
		for i := range nHosts {
			before[i] = hostOf(i)
		}
		var err error
		if round%2 == 0 {
			err = set.Replace(specs, "test")
		} else {
			// The same set as a Patch: what is not in specs goes.
			var remove []string
			for _, h := range set.State().Hosts {
				if !containsName(specs, h.Name) {
					remove = append(remove, h.Name)
				}
			}
			err = set.Patch(specs, remove, "test")
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		quiesce()
		// Let the clients run on this set a little.
		for start := served.Load(); served.Load() < start+20; {
			time.Sleep(time.Millisecond)
		}
		check()
	}
	close(stop)
	wg.Wait()
	check()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed while the set changed; first: %v", n, n+served.Load(), firstErr.Load())
	}
	if h := hostOf(1); h == nil || h.Up(upstream.Now()) {
		t.Fatal("host 1, marked down, is up after the changes")
	}
	if n := hits[1].Load(); n != downHits {
		t.Fatalf("host 1, marked down, got %d requests", n-downHits)
	}
	t.Logf("%d requests served over 60 changes", served.Load())
}

func containsName(specs []HostSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// HostSpec is upstream.HostSpec, for the tests.
type HostSpec = upstream.HostSpec

// A host added to an https proxy must be https, and one added to an
// http proxy http: the change is refused, saying what to write.
func TestLiveSetTransportFit(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler { return http.NotFoundHandler() })
	_, p := front(t, Options{Name: "live-fit", Upstreams: urls})
	set, _ := upstream.LookupSet("live-fit")
	err := set.Patch([]HostSpec{{Name: "https://127.0.0.1:1"}}, nil, "test")
	if err == nil || !strings.Contains(err.Error(), `upstream "https://127.0.0.1:1" is https: write http://127.0.0.1:1`) {
		t.Fatalf("adding an https host to an http proxy: %v", err)
	}
	if len(p.grp.Hosts()) != 1 {
		t.Fatal("a refused change changed the set")
	}
}

// A host removed from the set closes its idle keep-alive connections at
// once (the upstream sees them closed), and the requests after go to
// the hosts left.
func TestLiveSetRemovedHostClosesIdle(t *testing.T) {
	var open [2]atomic.Int64
	var urls []string
	for i := range 2 {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, i) }))
		s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				open[i].Add(1)
			case http.StateClosed, http.StateHijacked:
				open[i].Add(-1)
			}
		}
		s.Start()
		t.Cleanup(s.Close)
		urls = append(urls, s.URL)
	}
	srv, p := front(t, Options{Name: "live-idle", Upstreams: urls})
	for range 4 {
		if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	gone := p.grp.Hosts()[0]
	if open[0].Load() == 0 || gone.IdleCount() == 0 {
		t.Fatalf("host 0: %d connections open, %d idle in the pool; want one kept alive", open[0].Load(), gone.IdleCount())
	}
	set, _ := upstream.LookupSet("live-idle")
	if err := set.Patch(nil, []string{urls[0]}, "test"); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "host 0's idle connections to close", func() bool { return open[0].Load() == 0 })
	if gone.Open() != 0 {
		t.Fatalf("the host removed counts %d connections open", gone.Open())
	}
	for range 4 {
		if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "1" {
			t.Fatalf("after host 0 left: %d %q, want host 1's answer", resp.StatusCode, body)
		}
	}
}

// Over HTTP/2, requests waiting for a stream on a host (at max_conns,
// every stream taken) move to another host when that one leaves the
// set, rather than wait out queue_timeout (and get 503, which is what
// tells a request left waiting).
func TestLiveSetH2WaitersMove(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{})
	url0, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			close(held)
			<-release
		}
		fmt.Fprint(w, 0)
	}))
	url1, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, 1) }))
	srv, p := front(t, Options{Name: "live-h2-wait", Upstreams: []string{url0}, Transport: TransportH2C,
		MaxConns: 1, MaxStreams: 1, QueueTimeout: 5 * time.Second})
	defer close(release)
	go http.Get(srv.URL + "/hold")
	<-held
	h0 := h2HostOf(p.grp.Hosts()[0])
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, 3)
	for range 3 {
		go func() {
			resp, err := http.Get(srv.URL + "/")
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	sluicetest.WaitFor(t, "three requests waiting for a stream", func() bool {
		h0.mu.Lock()
		defer h0.mu.Unlock()
		return h0.waiters == 3
	})
	set, _ := upstream.LookupSet("live-h2-wait")
	if err := set.Replace([]HostSpec{{Name: url1}}, "test"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if a := <-answers; a.status != 200 || a.body != "1" {
			t.Fatalf("a request waiting on the host gone: %d %q, want host 1's answer", a.status, a.body)
		}
	}
}
