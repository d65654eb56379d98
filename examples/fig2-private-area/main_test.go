package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func startServer(t *testing.T, network bool) string {
	t.Helper()
	comp, stop, err := newServer("public", "users.htpasswd", network)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop) // after the server's shutdown
	return sluicetest.NewServer(t, pipe.Handler(comp)).URL
}

// get sends a GET for url with sluicetest.Do, with Basic credentials
// unless user is empty.
func get(t *testing.T, url, user, pass string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return sluicetest.Do(t, req)
}

// The public area is open; the private area answers 401 with a Basic
// challenge unless the credentials match the real htpasswd file — with a
// chain and with a process network alike.
func TestPrivateArea(t *testing.T) {
	public, _ := os.ReadFile(filepath.Join("public", "index.html"))
	private, _ := os.ReadFile(filepath.Join("public", "private", "index.html"))
	for _, network := range []bool{false, true} {
		base := startServer(t, network)
		tests := []struct {
			path, user, pass string
			status           int
			body             string
		}{
			{"/", "", "", 200, string(public)},
			{"/", "alice", "wrong", 200, string(public)},
			{"/private/", "", "", 401, ""},
			{"/private/", "alice", "wrong", 401, ""},
			{"/private/", "mallory", "wonderland", 401, ""},
			{"/private/index.html", "", "", 401, ""},
			{"/private", "", "", 401, ""},
			{"/private/", "alice", "wonderland", 200, string(private)},
		}
		for _, tt := range tests {
			resp, body := get(t, base+tt.path, tt.user, tt.pass)
			if resp.StatusCode != tt.status {
				t.Errorf("network=%v %s as %q: status %d, want %d", network, tt.path, tt.user, resp.StatusCode, tt.status)
				continue
			}
			switch tt.status {
			case 200:
				if body != tt.body {
					t.Errorf("network=%v %s: wrong body %.60q", network, tt.path, body)
				}
			case 401:
				if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, `Basic realm="private"`) {
					t.Errorf("network=%v %s: WWW-Authenticate %q", network, tt.path, ch)
				}
				if strings.Contains(body, "Private area") {
					t.Errorf("network=%v %s: private content leaked with 401", network, tt.path)
				}
			}
		}
	}
}

func TestNewServerErrors(t *testing.T) {
	if _, _, err := newServer("public", "no-such.htpasswd", false); err == nil {
		t.Error("newServer accepted a missing htpasswd file")
	}
	if _, _, err := newServer("no-such-dir", "users.htpasswd", false); err == nil {
		t.Error("newServer accepted a missing root")
	}
}
