//go:build unix

package fastcgi_test

import (
	"strings"
	"testing"

	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/sluicetest"
)

// fpmCounters returns the counters of the upstream named after addr in
// metrics.Default, zero if the client has not tried it yet.
func fpmCounters(addr string) metrics.UpstreamSnapshot {
	for _, u := range metrics.Take(metrics.Default).Upstreams {
		if strings.HasSuffix(u.Upstream, addr) {
			return u
		}
	}
	return metrics.UpstreamSnapshot{}
}

// Each response of PHP-FPM counts under its host by status class, with
// its time to the end; PHP-FPM's responses have no head timed apart.
func TestMetricsCountResponses(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	before := fpmCounters(s.fpm.Addr())
	for _, path := range []string{"/hello.php", "/hello.php", "/status.php", "/location.php"} {
		sluicetest.Get(t, s.srv.URL+path)
	}
	after := fpmCounters(s.fpm.Addr())
	if after.Upstream == "" {
		t.Fatalf("no counters of %s in %+v", s.fpm.Addr(), metrics.Take(metrics.Default).Upstreams)
	}
	for i, want := range [5]uint64{0, 2, 1, 1, 0} {
		if got := after.Classes[i] - before.Classes[i]; got != want {
			t.Errorf("%s: %d more, want %d", metrics.ClassName(i), got, want)
		}
	}
	if got := after.Total.Count() - before.Total.Count(); got != 4 {
		t.Errorf("response durations: %d more, want 4", got)
	}
	if after.Head.Count() != 0 || after.Failed != before.Failed {
		t.Errorf("head durations %d, failures %d more: want none", after.Head.Count(), after.Failed-before.Failed)
	}
}
