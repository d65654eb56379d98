package sluicetest_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A Load counts what do says of each request: served, or failed with the
// first failure kept, over the shared Client or a client per goroutine.
func TestLoad(t *testing.T) {
	var n atomic.Int64
	s := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if string(r.Path) == "/flaky" && n.Add(1)%3 == 0 {
			w.WriteHeader(503)
		}
		io.WriteString(w, "ok")
	}))
	get := func(path string) func(*http.Client) error {
		return func(c *http.Client) error {
			resp, err := c.Get(s.URL + path)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				return fmt.Errorf("%d %q", resp.StatusCode, body)
			}
			return nil
		}
	}
	own := func() *http.Client { return &http.Client{Transport: &http.Transport{}} }
	for _, tt := range []struct {
		name      string
		path      string
		newClient func() *http.Client
		fails     bool
	}{
		{"shared client", "/", nil, false},
		{"own clients", "/", own, false},
		{"failures", "/flaky", own, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := sluicetest.StartLoad(t, 3, tt.newClient, get(tt.path))
			l.WaitServed(t, 30)
			served, failed, first := l.Stop()
			if served < 30 || served != l.Served() {
				t.Errorf("served %d (Served %d), want at least 30", served, l.Served())
			}
			if tt.fails != (failed > 0) || tt.fails != strings.HasPrefix(first, "503 ") {
				t.Errorf("failed %d, first %q; want failures: %v", failed, first, tt.fails)
			}
			if again, _, _ := l.Stop(); again != served {
				t.Errorf("Stop again: served %d, want %d", again, served)
			}
		})
	}
}
