package fastcgi

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// Under load, the FastCGI client's set of servers changes in a loop
// through its live set (servers added, removed, drained), and no request
// fails; a server out of the set gets no request once its requests in
// flight are done.
func TestLiveSetUnderLoad(t *testing.T) {
	var srvs []*rawServer
	for i := range 3 {
		srvs = append(srvs, newRawServer(t, rec(6, 1, fmt.Sprintf("Content-Type: text/plain\r\n\r\n%d", i), 0)+end(0, 0), false))
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.php"))
	logger, _ := sluicetest.Logger()
	cl, err := New(Options{Options: upstream.Options{Name: "fcgi-live", Upstreams: []string{srvs[0].addr}, MaxConns: 2},
		Root: root, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	front := sluicetest.NewServer(t, pipe.Handler(cl))
	set, _ := upstream.LookupSet("fcgi-live")

	load := sluicetest.StartLoad(t, 6, nil, func(c *http.Client) error {
		resp, err := c.Get(front.URL + "/a.php")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != 1 {
			return fmt.Errorf("%d %q", resp.StatusCode, b)
		}
		return nil
	})
	sets := [][]upstream.HostSpec{
		{{Name: srvs[0].addr}, {Name: srvs[1].addr, Weight: 3}},
		{{Name: srvs[1].addr}, {Name: srvs[2].addr}},
		{{Name: srvs[2].addr}, {Name: srvs[0].addr, Drain: true}},
		{{Name: srvs[0].addr}},
	}
	for round := range 20 {
		before := map[string]*host{}
		for _, h := range cl.grp.Hosts() {
			before[h.Name] = h
		}
		want := sets[round%len(sets)]
		if err := set.Replace(want, "test"); err != nil {
			t.Fatal(err)
		}
		// The servers not taking requests now: once their requests in
		// flight are done, their counts must not move.
		frozen := map[int]int64{}
		for i, s := range srvs {
			taking := false
			for _, sp := range want {
				taking = taking || sp.Name == s.addr && !sp.Drain
			}
			if taking {
				continue
			}
			if h := before[s.addr]; h != nil {
				sluicetest.WaitFor(t, "requests in flight to a server gone", func() bool { return h.InFlight() == 0 })
			}
			frozen[i] = s.requests.Load()
		}
		load.WaitServed(t, 20)
		for i, n := range frozen {
			if got := srvs[i].requests.Load(); got != n {
				t.Fatalf("round %d: server %d, out of the set or draining, got %d requests", round, i, got-n)
			}
		}
	}
	served, failed, first := load.Stop()
	if failed > 0 {
		t.Fatalf("%d of %d requests failed while the set changed; first: %v", failed, failed+served, first)
	}
}
