//go:build unix

package cgi

import (
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A request over TLS tells the program so, as Apache and nginx do:
// HTTPS=on, REQUEST_SCHEME=https, and SERVER_PORT 443 when the Host
// names no port. Over plain HTTP neither is set (TestEnvHTTP10 checks
// SERVER_PORT 80).
func TestEnvTLS(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec env\n")
	g, _ := newGateway(t, Options{Script: script})
	srv := sluicetest.NewTLSServer(t, pipe.Handler(g))
	_, body := srv.RoundTrip(t, "GET /x HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	env := cgiEnvMap(body)
	for k, v := range map[string]string{"HTTPS": "on", "REQUEST_SCHEME": "https", "SERVER_PORT": "443", "SERVER_NAME": "example.com"} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
}
