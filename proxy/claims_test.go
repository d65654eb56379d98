package proxy

import (
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// The fields by which proxies tell an upstream about the client or the
// URL it asked for, beyond X-Forwarded-For, -Proto and -Host, pass only
// from a trusted proxy: an untrusted client's X-Real-IP, X-Forwarded-Port
// or X-Original-URL reached the upstream, which may believe it. Spelt with
// underscores they never pass while the proxy forwards. Raw requests
// through the proxy to an upstream that echoes every field it received.
func TestProxyClaimsFromUntrustedDropped(t *testing.T) {
	up := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		var b strings.Builder
		for _, f := range r.Fields {
			b.WriteString(string(f.Name) + "=" + string(f.Value) + "\n")
		}
		w.WriteString(b.String())
	}))
	claims := []string{
		"X-Real-IP: 6.6.6.6", "x-real-ip: 6.6.6.7", "X-Forwarded-Port: 443", "X-Forwarded-Prefix: /admin",
		"X-Forwarded-Server: evil", "X-Client-IP: 6.6.6.8", "Client-IP: 6.6.6.9", "True-Client-IP: 6.6.6.10",
		"X-Original-URL: /admin", "X-Rewrite-URL: /admin",
	}
	aliases := []string{"X_Real_IP: 7.7.7.7", "X-Forwarded_Port: 1", "X_Original_URL: /alias", "True_Client_IP: 7.7.7.8"}
	others := []string{"X-Real-Thing: kept", "X-Forwarded: kept", "Client-Hints: kept", "X-Original: kept"}
	raw := "GET /x HTTP/1.1\r\nHost: a.test\r\n" + strings.Join(claims, "\r\n") + "\r\n" +
		strings.Join(aliases, "\r\n") + "\r\n" + strings.Join(others, "\r\n") + "\r\nConnection: close\r\n\r\n"
	fieldLine := func(s string) string { name, value, _ := strings.Cut(s, ": "); return "\n" + name + "=" + value + "\n" }
	for _, c := range []struct {
		name        string
		opts        Options
		passed, not []string
	}{
		{"untrusted", Options{}, others, append(claims, aliases...)},
		{"rfc7239 untrusted", Options{Forwarded: ForwardedRFC7239}, others, append(claims, aliases...)},
		{"trusted", Options{TrustedProxies: []string{"127.0.0.0/8"}}, append(claims, others...), aliases},
		{"none", Options{Forwarded: ForwardedNone}, append(append(claims, aliases...), others...), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Upstreams = []string{"http://" + up.Addr}
			srv, _ := front(t, c.opts)
			resp := srv.Exchange(t, raw)
			if !strings.HasPrefix(resp, "HTTP/1.1 200 ") {
				t.Fatalf("response:\n%s", resp)
			}
			_, body, _ := strings.Cut(resp, "\r\n\r\n")
			body = "\n" + body
			for _, f := range c.passed {
				if !strings.Contains(body, fieldLine(f)) {
					t.Errorf("%q did not reach the upstream", f)
				}
			}
			for _, f := range c.not {
				if strings.Contains(body, fieldLine(f)) {
					t.Errorf("%q reached the upstream", f)
				}
			}
			if t.Failed() {
				t.Logf("upstream saw:\n%s", body)
			}
		})
	}
}
