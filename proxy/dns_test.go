package proxy

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// Under load, the SRV records of the proxy's upstream change in a loop,
// and fail now and then: the proxy follows them with no failed request,
// keeps the last good set through the failures, and refuses changes from
// outside (the records are the set's source).
func TestDNSUnderLoad(t *testing.T) {
	urls, _ := counted(t, 5, TransportHTTP)
	ports := make([]uint16, len(urls))
	for i, u := range urls {
		pu, _ := url.Parse(u)
		p, _ := strconv.Atoi(pu.Port())
		ports[i] = uint16(p)
	}
	dns := sluicetest.StartDNS(t)
	dns.SetA("node.test", 30, "127.0.0.1")
	srvOf := func(idx []int) []sluicetest.SRV {
		var out []sluicetest.SRV
		for _, i := range idx {
			out = append(out, sluicetest.SRV{Target: "node.test", Port: ports[i], Priority: 0, Weight: uint16(1 + i)})
		}
		return out
	}
	dns.SetSRV("_http._tcp.app.test", 0, srvOf([]int{0, 1})...)
	srv, p := front(t, Options{Name: "dns-load", Upstreams: []string{"srv+http://_http._tcp.app.test"},
		Resolver: dns.Addr, DNSMinInterval: 5 * time.Millisecond, DNSMaxInterval: 20 * time.Millisecond})
	names := func() []string {
		var out []string
		for _, h := range p.grp.Hosts() {
			out = append(out, h.Name)
		}
		slices.Sort(out)
		return out
	}
	want := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, urls[i])
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, want([]int{0, 1})) {
		t.Fatalf("hosts %q at the start", got)
	}

	load := sluicetest.StartLoad(t, 8, func() *http.Client {
		return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}, func(c *http.Client) error {
		resp, err := c.Get(srv.URL + "/")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})
	rng := rand.New(rand.NewPCG(3, 4))
	last := []int{0, 1}
	for round := range 30 {
		if round%5 == 4 {
			// A failing server: the set stays.
			before := dns.Queries("_http._tcp.app.test", dnsmessage.TypeSRV)
			dns.Fail(dnsmessage.RCodeServerFailure)
			sluicetest.WaitFor(t, "lookups to fail", func() bool { return dns.Queries("_http._tcp.app.test", dnsmessage.TypeSRV) >= before+2 })
			if got := names(); !slices.Equal(got, want(last)) {
				t.Fatalf("round %d: hosts %q after failed lookups, want the last good %q", round, got, want(last))
			}
			dns.Fail(dnsmessage.RCodeSuccess)
			continue
		}
		var idx []int
		for i := range urls {
			if rng.IntN(2) == 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			idx = []int{rng.IntN(len(urls))}
		}
		dns.SetSRV("_http._tcp.app.test", 0, srvOf(idx)...)
		sluicetest.WaitFor(t, "the proxy to follow the records", func() bool { return slices.Equal(names(), want(idx)) })
		last = idx
		load.WaitServed(t, 20)
	}
	served, failed, first := load.Stop()
	if failed > 0 {
		t.Fatalf("%d of %d requests failed while the records changed; first: %v", failed, failed+served, first)
	}
	set, _ := upstream.LookupSet("dns-load")
	if err := set.Replace([]HostSpec{{Name: urls[0]}}, "admin"); err == nil {
		t.Fatal("a set from DNS took a Replace")
	}
	t.Logf("%d requests served over 30 rounds of records", served)
}
