//go:build unix

package cgi

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
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
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ca := sluicetest.NewCA(t)
	srv := &engine.Server{Handler: pipe.Handler(g)}
	go srv.ServeWith(ln, engine.ListenerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	c, err := tls.Dial("tcp", ln.Addr().String(), ca.ClientConfig("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	env := cgiEnvMap(string(body))
	for k, v := range map[string]string{"HTTPS": "on", "REQUEST_SCHEME": "https", "SERVER_PORT": "443", "SERVER_NAME": "example.com"} {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
}
