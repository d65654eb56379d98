package upstream

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-server/sluice/sluicetest"
)

// shortTimeout makes a query to a server that does not answer give up
// soon, for the test.
func shortTimeout(t *testing.T) {
	old := dnsTimeout
	dnsTimeout = 100 * time.Millisecond
	t.Cleanup(func() { dnsTimeout = old })
}

// dnsGroup returns a started Group of names, looked up on dns, logging
// to the returned buffer.
func dnsGroup(t *testing.T, dns *sluicetest.DNSServer, names []string, minI, maxI time.Duration) (*Group[*fakeConn], *sluicetest.Buffer) {
	t.Helper()
	bal, _ := NewBalancer("", "")
	log := new(sluicetest.Buffer)
	g, err := NewGroup(names, bal, Config{DNS: DNSConfig{Resolver: dns.Addr, MinInterval: minI, MaxInterval: maxI},
		Log: slog.New(slog.NewTextHandler(log, nil))}, func(*fakeConn) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	g.Start()
	return g, log
}

func groupNames(g *Group[*fakeConn]) []string {
	var out []string
	for _, h := range g.Hosts() {
		out = append(out, h.Name)
	}
	return out
}

// A dns+ upstream is every address of the name's A and AAAA records,
// named as the transport spells a host, with the name looked up as its
// Authority; the records are followed as they change, the hosts that
// stay keeping their *Host; a failed lookup (an error code, NXDOMAIN, no
// answer, no record) keeps the last good hosts; changes are logged.
func TestDNSFollowsRecords(t *testing.T) {
	shortTimeout(t)
	dns := sluicetest.StartDNS(t)
	dns.SetA("app.test", 0, "127.0.0.1", "127.0.0.2", "::1")
	g, log := dnsGroup(t, dns, []string{"http://127.0.0.9:80", "dns+http://app.test:8080"}, 10*time.Millisecond, 20*time.Millisecond)
	want := []string{"http://127.0.0.9:80", "http://127.0.0.1:8080", "http://127.0.0.2:8080", "http://[::1]:8080"}
	if got := groupNames(g); !slices.Equal(got, want) {
		t.Fatalf("hosts %q, want %q", got, want)
	}
	if a := g.Hosts()[1].Authority; a != "app.test:8080" {
		t.Fatalf("authority %q, want the name looked up", a)
	}
	kept := g.Hosts()[2]

	dns.SetA("app.test", 0, "127.0.0.2", "127.0.0.3")
	want = []string{"http://127.0.0.9:80", "http://127.0.0.2:8080", "http://127.0.0.3:8080"}
	sluicetest.WaitFor(t, "the hosts to follow the records", func() bool { return slices.Equal(groupNames(g), want) })
	if g.Hosts()[1] != kept {
		t.Fatal("a host that stayed in the records lost its *Host")
	}
	if !strings.Contains(log.String(), `added=[http://127.0.0.3:8080] removed="[http://127.0.0.1:8080 http://[::1]:8080]"`) ||
		!strings.Contains(log.String(), `by="dns dns+http://app.test:8080"`) {
		t.Errorf("log lacks the change: %s", log)
	}

	for _, fail := range []struct {
		name  string
		apply func()
		undo  func()
	}{
		{"SERVFAIL", func() { dns.Fail(dnsmessage.RCodeServerFailure) }, func() { dns.Fail(dnsmessage.RCodeSuccess) }},
		{"NXDOMAIN", func() { dns.Fail(dnsmessage.RCodeNameError) }, func() { dns.Fail(dnsmessage.RCodeSuccess) }},
		{"no answer", func() { dns.Silent(true) }, func() { dns.Silent(false) }},
		{"no record", func() { dns.SetA("app.test", 0) }, func() { dns.SetA("app.test", 0, "127.0.0.2", "127.0.0.3") }},
	} {
		before := dns.Queries("app.test", dnsmessage.TypeA)
		fail.apply()
		sluicetest.WaitFor(t, "lookups to fail ("+fail.name+")", func() bool { return dns.Queries("app.test", dnsmessage.TypeA) >= before+3 })
		if got := groupNames(g); !slices.Equal(got, want) {
			t.Fatalf("%s: hosts %q after failed lookups, want the last good %q", fail.name, got, want)
		}
		fail.undo()
	}
	if !strings.Contains(log.String(), "DNS lookup failed; the hosts of the last good one stay") {
		t.Errorf("log lacks the failed lookups: %s", log)
	}
}

// An srv+ upstream is every target of the lowest priority of the SRV
// records, at the record's port, weighted in proportion; a target's
// addresses come from the answer's additional records, or else from a
// lookup of its own.
func TestDNSSRV(t *testing.T) {
	dns := sluicetest.StartDNS(t)
	dns.SetA("a.node.test", 30, "127.0.0.1")
	dns.SetA("b.node.test", 30, "127.0.0.2")
	dns.SetSRV("_http._tcp.app.test", 30,
		sluicetest.SRV{Target: "a.node.test", Port: 8001, Priority: 1, Weight: 30},
		sluicetest.SRV{Target: "b.node.test", Port: 8002, Priority: 1, Weight: 10},
		sluicetest.SRV{Target: "c.node.test", Port: 8003, Priority: 2, Weight: 10}, // a backup: left out
	)
	g, _ := dnsGroup(t, dns, []string{"srv+http://_http._tcp.app.test"}, 0, 0)
	s := g.Register("dns-srv", "test", slog.New(slog.DiscardHandler))
	st := s.State()
	// Weights 30 and 10 scale to 100 and 33.
	if len(st.Hosts) != 2 || st.Hosts[0].Name != "http://127.0.0.1:8001" || st.Hosts[0].Weight != 100 ||
		st.Hosts[1].Name != "http://127.0.0.2:8002" || st.Hosts[1].Weight != 33 {
		t.Fatalf("hosts %+v, want 127.0.0.1:8001 of weight 100 and 127.0.0.2:8002 of weight 33", st.Hosts)
	}
	if a := g.Hosts()[1].Authority; a != "b.node.test:8002" {
		t.Errorf("authority %q, want the target's name and port", a)
	}
	if st.Source != "srv+http://_http._tcp.app.test" {
		t.Errorf("source %q", st.Source)
	}
	if err := s.Patch([]HostSpec{{Name: "http://127.0.0.1:9"}}, nil, "admin"); err == nil || !strings.Contains(err.Error(), "follows the records of srv+http://_http._tcp.app.test") {
		t.Errorf("Patch of a set from DNS: %v", err)
	}
}

// The records' TTL sets when they are looked up again, within the
// bounds; after a failure the wait doubles from the minimum.
func TestDNSInterval(t *testing.T) {
	for _, tc := range []struct {
		ttl      time.Duration
		fails    int
		min, max time.Duration
		want     time.Duration
	}{
		{0, 0, 0, 0, DefaultDNSMinInterval},
		{30 * time.Second, 0, 0, 0, 30 * time.Second},
		{time.Hour, 0, 0, 0, DefaultDNSMaxInterval},
		{time.Hour, 0, time.Second, 10 * time.Second, 10 * time.Second},
		{0, 0, 5 * time.Second, 0, 5 * time.Second},
		{30 * time.Second, 1, time.Second, time.Minute, time.Second},
		{30 * time.Second, 3, time.Second, time.Minute, 4 * time.Second},
		{30 * time.Second, 30, time.Second, time.Minute, time.Minute},
		{0, 0, 2 * time.Minute, time.Minute, 2 * time.Minute}, // a maximum below the minimum: the minimum
	} {
		src := &dnsSource{ttl: tc.ttl, fails: tc.fails}
		if got := src.interval(DNSConfig{MinInterval: tc.min, MaxInterval: tc.max}); got != tc.want {
			t.Errorf("ttl %v, %d failures, bounds %v %v: %v, want %v", tc.ttl, tc.fails, tc.min, tc.max, got, tc.want)
		}
	}
}

// Lookups follow the TTL within the bounds: a TTL of an hour is looked
// up again at the maximum; a TTL of 0 no sooner than the minimum.
func TestDNSTTLBounds(t *testing.T) {
	dns := sluicetest.StartDNS(t)
	dns.SetA("long.test", 3600, "127.0.0.1")
	dns.SetA("short.test", 0, "127.0.0.1")
	dnsGroup(t, dns, []string{"dns+http://long.test:80"}, 10*time.Millisecond, 30*time.Millisecond)
	sluicetest.WaitFor(t, "a record of an hour's TTL looked up again at the maximum interval", func() bool {
		return dns.Queries("long.test", dnsmessage.TypeA) >= 4
	})
	const minI = 100 * time.Millisecond
	start := time.Now()
	dnsGroup(t, dns, []string{"dns+http://short.test:80"}, minI, time.Second)
	sluicetest.WaitFor(t, "lookups of a record of TTL 0", func() bool { return dns.Queries("short.test", dnsmessage.TypeA) >= 4 })
	// Four lookups: the first, and three after at least the minimum each.
	if elapsed := time.Since(start); elapsed < 3*minI {
		t.Fatalf("4 lookups of a TTL-0 record in %v, want no sooner than dns_min_interval (%v) apart", elapsed, minI)
	}
}

// A Group of names from DNS alone that cannot be looked up at the start
// has no host, answers ErrNoUpstream, and takes its hosts when the
// records come.
func TestDNSStartsEmpty(t *testing.T) {
	dns := sluicetest.StartDNS(t)
	g, log := dnsGroup(t, dns, []string{"dns+http://late.test:80"}, 10*time.Millisecond, 20*time.Millisecond)
	if len(g.Hosts()) != 0 || !strings.Contains(log.String(), "it gives no host until one succeeds") {
		t.Fatalf("hosts %v, log %s", groupNames(g), log)
	}
	a := g.Begin(true, 0)
	if a.Next(nil, nil, nil) || a.Err() != ErrNoUpstream {
		t.Fatalf("a request to no host: Err %v, want ErrNoUpstream", a.Err())
	}
	dns.SetA("late.test", 0, "127.0.0.1")
	sluicetest.WaitFor(t, "the host to come", func() bool { return len(g.Hosts()) == 1 })
}

// The spellings of upstreams from DNS, and their mistakes.
func TestParseDNSTarget(t *testing.T) {
	check := func(name string) error { _, err := parseHost[*fakeConn](name); return err }
	for _, tc := range []struct{ in, want string }{
		{"dns+http://app.test:8080", "app.test. 8080 http"},
		{"dns+http://app.test", "app.test. 80 http"},
		{"dns+https://app.test", "app.test. 443 https"},
		{"srv+http://_http._tcp.app.test", "_http._tcp.app.test. srv http"},
		{"dns+http://10.0.0.1:80", "error: 10.0.0.1 is an address, not a name to look up: write http://10.0.0.1:80"},
		{"srv+http://_http._tcp.app.test:80", "error: SRV records give the port: write srv+http://_http._tcp.app.test"},
		{"srv+http://app.test", "error: an SRV name starts with _service._proto"},
		{"dns+ftp://app.test:21", "error: the scheme after dns+ is the transport's"},
		{"dns+http://app.test:0", "error: port \"0\": want 1 to 65535"},
		{"dns+http://app.test/x", "error: want dns+SCHEME://name:port"},
		{"dns+http://app..test:1", "error: \"app..test\" is not a DNS name"},
	} {
		got, err := parseDNSTarget(tc.in, check)
		s := got.name + " " + got.port + " " + got.scheme
		if got.srv {
			s = got.name + " srv " + got.scheme
		}
		if err != nil {
			s = "error: " + err.Error()
		}
		if !strings.Contains(s, strings.TrimPrefix(tc.want, "error: ")) || strings.HasPrefix(tc.want, "error") != (err != nil) {
			t.Errorf("%s: %s, want %s", tc.in, s, tc.want)
		}
	}
}

func TestParseResolvConf(t *testing.T) {
	got := parseResolvConf(strings.NewReader("# comment\nsearch example.com\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver bogus\noptions ndots:5\n"))
	if want := []string{"10.0.0.2:53", "[fe80::1%eth0]:53"}; !slices.Equal(got, want) {
		t.Fatalf("nameservers %q, want %q", got, want)
	}
}
