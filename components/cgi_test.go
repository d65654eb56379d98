package components

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/cgi"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// The cgi component is package cgi's Gateway; package cgi tests it. This
// test is of cgi with basic_auth before it.

// REMOTE_USER names the user basic_auth admitted, and AUTH_TYPE its
// scheme, only for such a user: credentials a request merely carries (no
// authentication on the route, or a password basic_auth refused) set
// neither (RFC 3875 §4.1.1).
func TestRemoteUser(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "user.cgi")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+
		"printf 'Content-Type: text/plain\\n\\n%s|%s' \"${REMOTE_USER-unset}\" \"${AUTH_TYPE-unset}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := NewCGI(CGIOptions{Options: cgi.Options{Script: script, Logger: guardQuiet}})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := NewBasicAuth(BasicAuthOptions{Realm: "r", Htpasswd: authFile(t, "alice:"+authSHA("pw"))})
	if err != nil {
		t.Fatal(err)
	}
	guarded := "http://" + sluicetest.NewServer(t, pipe.Handler(pipe.Chain{auth, g})).Addr
	open := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
	for _, tt := range []struct {
		name, url, authorization string
		status                   int
		body                     string
	}{
		{"admitted", guarded, authHeader("alice", "pw"), 200, "alice|Basic"},
		{"refused", guarded, authHeader("alice", "wrong"), 401, ""},
		{"claimed on an open route", open, authHeader("alice", "whatever"), 200, "unset|unset"},
		{"no credentials", open, "", 200, "unset|unset"},
	} {
		req, _ := http.NewRequest("GET", tt.url+"/", nil)
		if tt.authorization != "" {
			req.Header.Set("Authorization", tt.authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != tt.status || tt.status == 200 && body != tt.body {
			t.Errorf("%s: %d %q, want %d %q", tt.name, resp.StatusCode, body, tt.status, tt.body)
		}
	}
}
