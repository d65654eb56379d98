package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// whoami starts three upstreams that answer with their index.
func whoami(t *testing.T) []string {
	_, urls := upstreams(t, 3, func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, i) })
	})
	return urls
}

// spread sends n GETs to url, the i-th with the fields fields(i) gives,
// and returns how many each upstream answered, and which answered each.
func spread(t *testing.T, url string, n int, fields func(i int) []string) ([3]int, []int) {
	t.Helper()
	var counts [3]int
	var who []int
	for i := range n {
		var f []string
		if fields != nil {
			f = fields(i)
		}
		resp, body := sluicetest.Get(t, url, f...)
		k, err := strconv.Atoi(body)
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		counts[k]++
		who = append(who, k)
	}
	return counts, who
}

func TestRoundRobin(t *testing.T) {
	srv, _ := front(t, Options{Upstreams: whoami(t)})
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts != [3]int{10, 10, 10} {
		t.Fatalf("round_robin spread %v, want 10 each", counts)
	}
}

// least_conn spreads sequential requests evenly (ties rotate), and sends
// none to an upstream busy with a request in flight while others idle.
func TestLeastConn(t *testing.T) {
	release := make(chan struct{})
	var inSlow sync.WaitGroup
	inSlow.Add(1)
	_, urls := upstreams(t, 3, func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				inSlow.Done()
				<-release
			}
			fmt.Fprint(w, i)
		})
	})
	srv, _ := front(t, Options{Upstreams: urls, Policy: LeastConn})
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts != [3]int{10, 10, 10} {
		t.Fatalf("least_conn spread %v, want 10 each", counts)
	}
	slowDone := make(chan int)
	go func() {
		resp, err := sluicetest.Client.Get(srv.URL + "/slow")
		if err != nil {
			slowDone <- -1
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		k, _ := strconv.Atoi(string(b))
		slowDone <- k
	}()
	inSlow.Wait()
	counts, _ := spread(t, srv.URL+"/", 20, nil)
	close(release)
	busy := <-slowDone
	if busy < 0 || counts[busy] != 0 {
		t.Fatalf("least_conn sent %v with upstream %d busy, want none to it", counts, busy)
	}
}

func TestRandomTwo(t *testing.T) {
	srv, _ := front(t, Options{Upstreams: whoami(t), Policy: RandomTwo})
	counts, _ := spread(t, srv.URL+"/", 300, nil)
	for i, n := range counts {
		if n < 30 { // expected 100; fewer than 30 has probability < 1e-20
			t.Fatalf("random_two spread %v: upstream %d starved", counts, i)
		}
	}
}

// ip_hash keeps a client on one upstream, and spreads clients: here
// clients named by a trusted proxy's X-Forwarded-For.
func TestIPHash(t *testing.T) {
	srv, _ := front(t, Options{Upstreams: whoami(t), Policy: IPHash, TrustedProxies: []string{"127.0.0.1"}})
	checkSticky(t, srv.URL+"/", func(i int) []string {
		return []string{"X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i%20)}
	}, 20)
	// Without a trusted proxy, the peer is the client: one upstream.
	srv2, _ := front(t, Options{Upstreams: whoami(t), Policy: IPHash})
	counts, _ := spread(t, srv2.URL+"/", 20, func(i int) []string {
		return []string{"X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i)}
	})
	if max(counts[0], counts[1], counts[2]) != 20 {
		t.Fatalf("ip_hash from one untrusted peer spread %v, want one upstream", counts)
	}
}

func TestHash(t *testing.T) {
	for _, c := range []struct {
		key    string
		fields func(i int) []string
		path   func(i int) string
	}{
		{"header:X-User", func(i int) []string { return []string{"X-User", fmt.Sprint("u", i%20)} }, nil},
		{"cookie:sid", func(i int) []string { return []string{"Cookie", fmt.Sprintf("a=b; sid=s%d; c=d", i%20)} }, nil},
		{"path", nil, func(i int) string { return fmt.Sprint("/p", i%20) }},
	} {
		t.Run(c.key, func(t *testing.T) {
			srv, _ := front(t, Options{Upstreams: whoami(t), Policy: Hash, HashKey: c.key})
			url := func(i int) string {
				if c.path != nil {
					return srv.URL + c.path(i)
				}
				return srv.URL + "/"
			}
			first := map[int]int{}
			used := map[int]bool{}
			for i := range 60 {
				var f []string
				if c.fields != nil {
					f = c.fields(i)
				}
				_, body := sluicetest.Get(t, url(i), f...)
				k, _ := strconv.Atoi(body)
				used[k] = true
				if j, ok := first[i%20]; ok && j != k {
					t.Fatalf("key %d went to %d, then %d", i%20, j, k)
				}
				first[i%20] = k
			}
			if len(used) < 2 {
				t.Fatalf("20 keys all went to one upstream")
			}
		})
	}
}

// checkSticky sends n*3 requests with the fields of key i%n: each key
// must stay on one upstream, and the keys must use at least two.
func checkSticky(t *testing.T, url string, fields func(i int) []string, n int) {
	t.Helper()
	_, who := spread(t, url, 3*n, fields)
	used := map[int]bool{}
	for i, k := range who {
		used[k] = true
		if who[i%n] != k {
			t.Fatalf("key %d went to %d, then %d", i%n, who[i%n], k)
		}
	}
	if len(used) < 2 {
		t.Fatalf("%d keys all went to one upstream", n)
	}
}

func TestPolicyOptionsRefused(t *testing.T) {
	for _, o := range []Options{
		{Upstreams: []string{"http://127.0.0.1:1"}, Policy: "fastest"},
		{Upstreams: []string{"http://127.0.0.1:1"}, Policy: Hash},
		{Upstreams: []string{"http://127.0.0.1:1"}, Policy: Hash, HashKey: "query:x"},
		{Upstreams: []string{"http://127.0.0.1:1"}, Policy: RoundRobin, HashKey: "path"},
		{Upstreams: []string{"ftp://127.0.0.1:1"}},
		{Upstreams: []string{"http://127.0.0.1:1/path"}},
		{Upstreams: []string{"unix:"}},
		{},
		{Upstreams: []string{"http://127.0.0.1:1"}, Forwarded: "x-real-ip"},
		{Upstreams: []string{"http://127.0.0.1:1"}, StripPrefix: "api"},
		{Upstreams: []string{"http://127.0.0.1:1"}, Host: "a b"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
}
