package proxy

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// hostUpstreams starts an upstream on each of n network namespaces,
// standing for n machines; upstream i answers its number, and the path
// /from with the address the request came from. It returns the hosts
// and the upstreams' URLs.
func hostUpstreams(t *testing.T, n int) ([]*sluicetest.NetHost, []string) {
	t.Helper()
	hosts := sluicetest.NetHosts(t, n)
	var urls []string
	for i, h := range hosts {
		ln := h.Listen(t)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/from" {
				host, _, _ := net.SplitHostPort(r.RemoteAddr)
				fmt.Fprint(w, host)
				return
			}
			fmt.Fprint(w, i)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		urls = append(urls, "http://"+ln.Addr().String())
	}
	return hosts, urls
}

// Upstreams on three hosts, each with its own address: round_robin
// spreads requests evenly across them, and each sees the proxy coming
// from its own link.
func TestHostsRoundRobin(t *testing.T) {
	hosts, urls := hostUpstreams(t, 3)
	srv, _ := front(t, Options{Upstreams: urls})
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts != [3]int{10, 10, 10} {
		t.Fatalf("round_robin across hosts spread %v, want 10 each", counts)
	}
	for i, h := range hosts {
		_, body := sluicetest.Get(t, srv.URL+"/from")
		if body != h.Peer {
			t.Errorf("host %d (%s) saw the proxy at %q, want %s", i, h.Addr, body, h.Peer)
		}
	}
}

// A host vanishing (its link down: connections to it are neither
// accepted nor refused) costs the clients of idempotent requests
// nothing: each attempt on it times out connecting and is retried on
// another host. The active check marks it down; when its link comes back
// the check brings it back and requests reach it again.
func TestHostVanishes(t *testing.T) {
	hosts, urls := hostUpstreams(t, 3)
	srv, p := front(t, Options{
		Upstreams: urls,
		// A connection kept from before the host vanished would carry
		// a request the host never answers; each request connects
		// afresh, so every failure is a failure to connect.
		MaxIdleConns:   -1,
		ConnectTimeout: 200 * time.Millisecond,
		Passive:        PassiveHealth{Failures: -1},
		// The check's timeout is long enough for a healthy host to
		// answer on a loaded machine (the race detector, other tests):
		// at 200 ms, checks of hosts 0 and 2 timed out there and marked
		// one of them down too. The vanished host still fails its checks
		// (nothing answers it), a second each.
		Health: Health{Path: "/", Interval: 20 * time.Millisecond, Timeout: time.Second, Rise: 2, Fall: 2},
	})
	isDown := func() bool { return !p.grp.Hosts()[1].Up(upstream.Now()) }

	hosts[1].SetLink(t, false)
	// The first rounds still choose host 1, until the check marks it
	// down: none of those requests may fail.
	counts, _ := spread(t, srv.URL+"/", 30, nil)
	if counts[1] != 0 || counts[0]+counts[2] != 30 {
		t.Fatalf("answers %v with host 1 gone, want all from hosts 0 and 2", counts)
	}
	sluicetest.WaitFor(t, "the health check to mark the vanished host down", isDown)
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts[1] != 0 || counts[0] == 0 || counts[2] == 0 {
		t.Fatalf("answers %v with host 1 marked down, want all from hosts 0 and 2", counts)
	}

	hosts[1].SetLink(t, true)
	sluicetest.WaitFor(t, "the health check to bring host 1 back", func() bool { return !isDown() })
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts != [3]int{10, 10, 10} {
		t.Fatalf("answers %v with host 1 back, want 10 each", counts)
	}
}

// A host that never answers a connection (its link down: no refusal
// comes back) is answered 504 when the connect timeout expires, not
// when the kernel gives up.
func TestHostConnectTimeout(t *testing.T) {
	hosts, urls := hostUpstreams(t, 1)
	hosts[0].SetLink(t, false)
	srv, _ := front(t, Options{Upstreams: urls, Retries: -1, ConnectTimeout: 100 * time.Millisecond})
	resp, body := sluicetest.Get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusGatewayTimeout || body != "504 Gateway Timeout: upstream did not accept the connection in time\n" {
		t.Fatalf("to a black-holed host: %d %q, want 504 upstream did not accept the connection in time", resp.StatusCode, body)
	}
}
