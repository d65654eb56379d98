//go:build unix

package cgi

import (
	"bufio"
	"io"
	"testing"
	"time"

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
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(sluicetest.RawTimeout))
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	_, body := sluicetest.ReadResponse(t, bufio.NewReader(c), "GET")
	env := cgiEnvMap(body)
	for k, v := range map[string]string{"HTTPS": "on", "REQUEST_SCHEME": "https", "SERVER_PORT": "443", "SERVER_NAME": "example.com"} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
}
