package upstream

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// register registers g under name, logging to the returned buffer, and
// checks that LookupSet finds it.
func register(t *testing.T, g *Group[*fakeConn], name string) (*LiveSet, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	s := g.Register(name, "test", slog.New(slog.NewTextHandler(&buf, nil)))
	if got, ok := LookupSet(name); !ok || got != s {
		t.Fatalf("LookupSet(%q) = %v, %v; want the set registered", name, got, ok)
	}
	return s, &buf
}

func hostNames(hs []HostState) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

// Replace keeps the *Host of each host that stays (its pool, requests in
// flight and health), retires those that go (their idle connections
// closed, no new request, their requests in flight finishing), and adds
// new ones; the change is logged with who made it.
func TestReplaceKeepsHosts(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:31", "http://127.0.0.1:32"}, Config{MaxIdleConns: 4, Passive: passive})
	s, log := register(t, g, "replace-keeps")
	a, b := g.Hosts()[0], g.Hosts()[1]
	for range 2 {
		if _, _, err := a.Get(Now(), false); err != nil {
			t.Fatal(err)
		}
	}
	idleA := &fakeConn{id: 1}
	a.Keep(idleA, Now())
	a.Keep(&fakeConn{id: 3}, Now()) // the request in flight takes this one
	if _, _, err := b.Get(Now(), false); err != nil {
		t.Fatal(err)
	}
	idleB := &fakeConn{id: 2}
	b.Keep(idleB, Now())
	// b is marked down, and a request is in flight to a.
	b.Failed(time.Now(), &passive)
	b.Failed(time.Now(), &passive)
	inFlight := g.Begin(true, 0)
	if h, c := next(&inFlight); h != a || c.id != 3 {
		t.Fatalf("request went to %v, want the host up", h)
	}

	err := s.Replace([]HostSpec{{Name: "http://127.0.0.1:32", Weight: 3}, {Name: "http://127.0.0.1:33"}}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	hosts := g.Hosts()
	if len(hosts) != 2 || hosts[0] != b || hosts[1].Name != "http://127.0.0.1:33" {
		t.Fatalf("hosts after Replace: %v, want b kept, then the new one", hosts)
	}
	if b.Up(Now()) {
		t.Error("b was marked down and is up after Replace: its health was lost")
	}
	if b.IdleCount() != 1 || idleB.closed {
		t.Errorf("b's pool after Replace: %d idle, closed %v; want its connection kept", b.IdleCount(), idleB.closed)
	}
	if !idleA.closed || a.IdleCount() != 0 {
		t.Errorf("a's idle connection after a left: closed %v, %d idle; want closed", idleA.closed, a.IdleCount())
	}
	if a.InFlight() != 1 {
		t.Errorf("a's request in flight: %d, want 1 (it finishes)", a.InFlight())
	}
	inFlight.Done()
	// A request that had picked a before the change cannot start on it.
	st := s.State()
	if st.Hosts[0].Weight != 3 || st.Hosts[1].Weight != 1 || st.Source != SourceConfig || st.Transport != "test" {
		t.Errorf("state %+v, want weights 3 and 1", st)
	}
	for _, want := range []string{"set=replace-keeps", "added=[http://127.0.0.1:33]", "removed=[http://127.0.0.1:31]", "changed=[http://127.0.0.1:32]", "by=tester"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
	// New requests go to b (down: skipped) and the new host, never a.
	for range 10 {
		at := g.Begin(true, 0)
		h, _ := next(&at)
		if h == a || h == nil {
			t.Fatalf("request went to %v after a left", h)
		}
		at.Done()
	}
}

// A request that picked a host before it left the set does not start
// on it: Start reports false, and Next picks a host of the new set.
func TestStartOnHostGone(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:41"}, Config{})
	a := g.Begin(true, 0)
	if !a.Next(nil, nil, nil) {
		t.Fatal("no host")
	}
	old := a.Host()
	if err := g.Replace([]HostSpec{{Name: "http://127.0.0.1:42"}}); err != nil {
		t.Fatal(err)
	}
	if a.Start() {
		t.Fatal("Start on a host that left the set reported true")
	}
	if old.InFlight() != 0 || old.Requests() != 0 {
		t.Fatalf("the host gone counts %d in flight, %d requests; want 0", old.InFlight(), old.Requests())
	}
	if !a.Next(nil, nil, nil) || a.Host().Name != "http://127.0.0.1:42" {
		t.Fatalf("Next after the change picked %v, want the new host", a.Host())
	}
	if !a.Start() {
		t.Fatal("Start on the new host reported false")
	}
	a.Done()
}

// Patch adds, removes, re-weights and drains; a drained host stays
// listed but takes no new request.
func TestPatch(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:51", "http://127.0.0.1:52"}, Config{})
	s, _ := register(t, g, "patch")
	if err := s.Patch([]HostSpec{{Name: "http://127.0.0.1:53", Weight: 2}, {Name: "http://127.0.0.1:51", Drain: true}}, []string{"http://127.0.0.1:52"}, "t"); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if got := hostNames(st.Hosts); !slices.Equal(got, []string{"http://127.0.0.1:51", "http://127.0.0.1:53"}) {
		t.Fatalf("hosts %v", got)
	}
	if !st.Hosts[0].Draining || st.Hosts[0].Weight != 1 || st.Hosts[1].Weight != 2 {
		t.Fatalf("state %+v, want 51 draining, 53 of weight 2", st.Hosts)
	}
	for range 10 {
		if h := g.Pick(0, nil, nil); h.Name != "http://127.0.0.1:53" {
			t.Fatalf("picked %s, want the one host not draining", h.Name)
		}
	}
	// Undrain, weight kept when 0.
	if err := s.Patch([]HostSpec{{Name: "http://127.0.0.1:53"}, {Name: "http://127.0.0.1:51"}}, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if st := s.State(); st.Hosts[0].Draining || st.Hosts[1].Weight != 2 {
		t.Fatalf("state %+v, want 51 taking requests, 53 still of weight 2", st.Hosts)
	}
}

// A change that cannot be made is refused whole, with a message naming
// the host and saying what to write.
func TestChangeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace bool
		specs   []HostSpec
		remove  []string
		want    string
	}{
		{"no scheme", false, []HostSpec{{Name: "10.0.0.1:80"}}, nil, "write http://10.0.0.1:80"},
		{"from DNS", false, []HostSpec{{Name: "dns+http://app.test:80"}}, nil, "an upstream from DNS is written in the config file"},
		{"weight", false, []HostSpec{{Name: "http://127.0.0.1:63", Weight: 101}}, nil, `"http://127.0.0.1:63": weight 101: want 1 to 100`},
		{"negative weight", true, []HostSpec{{Name: "http://127.0.0.1:63", Weight: -1}}, nil, "want 1 to 100"},
		{"twice", true, []HostSpec{{Name: "http://127.0.0.1:63"}, {Name: "http://127.0.0.1:63"}}, nil, "named twice"},
		{"remove unknown", false, nil, []string{"http://127.0.0.1:99"}, `remove "http://127.0.0.1:99": no such host in the set (it has http://127.0.0.1:61, http://127.0.0.1:62)`},
		{"add and remove", false, []HostSpec{{Name: "http://127.0.0.1:61"}}, []string{"http://127.0.0.1:61"}, "both added and removed"},
		{"empty", true, nil, nil, "no host left"},
		{"remove all", false, nil, []string{"http://127.0.0.1:61", "http://127.0.0.1:62"}, "no host left"},
		{"all draining", false, []HostSpec{{Name: "http://127.0.0.1:61", Drain: true}, {Name: "http://127.0.0.1:62", Drain: true}}, nil, "every host draining"},
		{"too many", true, manySpecs(65), nil, "at most 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, []string{"http://127.0.0.1:61", "http://127.0.0.1:62"}, Config{})
			before := g.Hosts()
			s := g.Register("errors-"+tc.name, "test", slog.New(slog.DiscardHandler))
			var err error
			if tc.replace {
				err = s.Replace(tc.specs, "t")
			} else {
				err = s.Patch(tc.specs, tc.remove, "t")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), `set "errors-`+tc.name+`": `) {
				t.Errorf("err = %v, want it to name the set", err)
			}
			if after := g.Hosts(); !slices.Equal(before, after) {
				t.Errorf("hosts changed by a refused change: %v", after)
			}
		})
	}
}

func manySpecs(n int) []HostSpec {
	var out []HostSpec
	for i := range n {
		out = append(out, HostSpec{Name: "http://127.0.0.1:" + string(rune('0'+i/10)) + string(rune('0'+i%10))})
	}
	return out
}

// The registry: a name is the newest Group's registered under it; when
// that one closes (a config that failed to load), the name goes back to
// the one before; Sets lists each name once, sorted.
func TestRegistry(t *testing.T) {
	old := newGroup(t, []string{"http://127.0.0.1:71"}, Config{})
	oldSet := old.Register("reg-b", "proxy", nil)
	other := newGroup(t, []string{"http://127.0.0.1:72"}, Config{})
	other.Register("reg-a", "fastcgi", nil)
	next := newGroup(t, []string{"http://127.0.0.1:73"}, Config{})
	nextSet := next.Register("reg-b", "proxy", nil)
	if s, _ := LookupSet("reg-b"); s != nextSet {
		t.Fatal("LookupSet returns the older set under a name taken over")
	}
	var got []string
	for _, st := range Sets() {
		if strings.HasPrefix(st.Name, "reg-") {
			got = append(got, st.Name+" "+st.Hosts[0].Name)
		}
	}
	if want := []string{"reg-a http://127.0.0.1:72", "reg-b http://127.0.0.1:73"}; !slices.Equal(got, want) {
		t.Fatalf("Sets: %v, want %v", got, want)
	}
	next.Close()
	if s, _ := LookupSet("reg-b"); s != oldSet {
		t.Fatal("closing the newer set did not give the name back to the older")
	}
	if err := nextSet.Replace([]HostSpec{{Name: "http://127.0.0.1:74"}}, "t"); !errors.Is(err, ErrSetClosed) {
		t.Fatalf("Replace on a closed set: %v, want an error saying it is closed", err)
	}
	old.Close()
	if _, ok := LookupSet("reg-b"); ok {
		t.Fatal("a name whose sets all closed is still registered")
	}
}

// A set fed by DNS refuses changes from outside.
func TestLiveSetFromDNS(t *testing.T) {
	g := newGroup(t, []string{"http://127.0.0.1:81"}, Config{})
	s := g.Register("dns-refuses", "proxy", slog.New(slog.DiscardHandler))
	s.setSource("dns+http://app.test:8080")
	err := s.Replace([]HostSpec{{Name: "http://127.0.0.1:82"}}, "t")
	if err == nil || !strings.Contains(err.Error(), "change the records") {
		t.Fatalf("Replace on a DNS set: %v", err)
	}
	if st := s.State(); st.Source != "dns+http://app.test:8080" {
		t.Fatalf("source %q", st.Source)
	}
}

// round_robin spreads weights smoothly, as nginx does.
func TestSmoothWeightedRoundRobin(t *testing.T) {
	g := newGroup(t, []string{"http://a"}, Config{})
	if err := g.Replace([]HostSpec{{Name: "http://a", Weight: 5}, {Name: "http://b"}, {Name: "http://c"}}); err != nil {
		t.Fatal(err)
	}
	var seq strings.Builder
	for range 14 {
		seq.WriteString(strings.TrimPrefix(g.Pick(0, nil, nil).Name, "http://"))
	}
	// nginx's order for weights 5, 1, 1.
	if got, want := seq.String(), "aabacaaaabacaa"; got != want {
		// The counter may start anywhere in the cycle of 7.
		if !strings.Contains("aabacaa"+"aabacaa"+"aabacaa", got) {
			t.Fatalf("order %s, want the cycle aabacaa", got)
		}
	}
}

// Weights share the picks out: round_robin exactly, the hashes and
// random_two in proportion; least_conn by requests in flight per weight.
func TestWeightedPolicies(t *testing.T) {
	for _, policy := range []string{RoundRobin, RandomTwo, Hash} {
		t.Run(policy, func(t *testing.T) {
			key := ""
			if policy == Hash {
				key = "path"
			}
			bal, err := NewBalancer(policy, key)
			if err != nil {
				t.Fatal(err)
			}
			g, err := NewGroup([]string{"http://a"}, bal, Config{}, func(*fakeConn) {})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if err := g.Replace([]HostSpec{{Name: "http://a", Weight: 3}, {Name: "http://b"}}); err != nil {
				t.Fatal(err)
			}
			const n = 4000
			count := map[string]int{}
			var r engine.Request
			for i := range n {
				r.Path = []byte("/" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)))
				count[g.Pick(0, &r, nil).Name]++
			}
			// 3:1 of the picks; random_two picks the less busy of two
			// drawn by weight, all idle here: the first drawn.
			if a := count["http://a"]; a < n*3/4-n/10 || a > n*3/4+n/10 {
				t.Fatalf("picks %v, want about 3:1", count)
			}
		})
	}
	t.Run(LeastConn, func(t *testing.T) {
		bal, _ := NewBalancer(LeastConn, "")
		g, err := NewGroup([]string{"http://a", "http://b"}, bal, Config{}, func(*fakeConn) {})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if err := g.Patch([]HostSpec{{Name: "http://a", Weight: 3}}, nil); err != nil {
			t.Fatal(err)
		}
		a, b := g.Hosts()[0], g.Hosts()[1]
		// 2 in flight on a (weight 3) is lighter than 1 on b (weight 1).
		a.Begin()
		a.Begin()
		b.Begin()
		for range 5 {
			if h := g.Pick(0, nil, nil); h != a {
				t.Fatalf("least_conn picked %s, want a (2/3 < 1/1)", h.Name)
			}
		}
		a.Begin()
		a.Begin() // 4/3 > 1/1
		for range 5 {
			if h := g.Pick(0, nil, nil); h != b {
				t.Fatalf("least_conn picked %s, want b (4/3 > 1/1)", h.Name)
			}
		}
	})
}

// A changed weight moves only the keys it must: with hash, keys of the
// hosts whose weight did not change and that did not grow stay put.
func TestWeightedHashStable(t *testing.T) {
	bal, _ := NewBalancer(Hash, "path")
	g, err := NewGroup([]string{"http://a", "http://b", "http://c"}, bal, Config{}, func(*fakeConn) {})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var r engine.Request
	before := map[string]string{}
	for i := range 500 {
		r.Path = []byte("/k" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		before[string(r.Path)] = g.Pick(0, &r, nil).Name
	}
	if err := g.Patch([]HostSpec{{Name: "http://c", Weight: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for k, was := range before {
		r.Path = []byte(k)
		now := g.Pick(0, &r, nil).Name
		if now != was {
			moved++
			if now != "http://c" {
				t.Fatalf("key %s moved from %s to %s, not to the host that grew", k, was, now)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no key moved to the host whose weight doubled")
	}
}

// A host as a config lists it may carry weight=N and drain.
func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want HostSpec
		err  string
	}{
		{"http://a:1", HostSpec{Name: "http://a:1"}, ""},
		{"http://a:1 weight=3", HostSpec{Name: "http://a:1", Weight: 3}, ""},
		{"http://a:1  drain weight=100", HostSpec{Name: "http://a:1", Weight: 100, Drain: true}, ""},
		{"http://a:1 weight=0", HostSpec{}, `weight=0: want weight=N, N from 1 to 100`},
		{"http://a:1 weight=x", HostSpec{}, `want weight=N`},
		{"http://a:1 backup", HostSpec{}, `"backup": after the host, write weight=N (1 to 100) or drain`},
	} {
		got, err := parseSpec(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	g := newGroup(t, []string{"http://a:1 weight=5", "http://b:1", "http://c:1 drain"}, Config{})
	s := g.Register("spec-weights", "test", slog.New(slog.DiscardHandler))
	st := s.State()
	if st.Hosts[0].Name != "http://a:1" || st.Hosts[0].Weight != 5 || st.Hosts[1].Weight != 1 || !st.Hosts[2].Draining {
		t.Fatalf("state %+v", st.Hosts)
	}
	bal, _ := NewBalancer("", "")
	if _, err := NewGroup([]string{"dns+http://a.test:1 weight=2"}, bal, Config{}, func(*fakeConn) {}); err == nil || !strings.Contains(err.Error(), "not to a name looked up") {
		t.Fatalf("weight on a DNS name: %v", err)
	}
	if _, err := NewGroup([]string{"http://a:1 drain"}, bal, Config{}, func(*fakeConn) {}); err == nil || !strings.Contains(err.Error(), "every host draining") {
		t.Fatalf("every host drained: %v", err)
	}
}
