package cache

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request that shares another's revalidation never gets a response
// meant for that request only: here the revalidating request sends a
// Cookie the key does not cover, and the origin answers with a page for
// that cookie (stored, Vary: Cookie); a request without the cookie that
// joined the revalidation fetches its own.
func TestSharedRevalidationKeepsPrivateAnswer(t *testing.T) {
	tests := []struct {
		name   string
		fields []string // of the origin's answer to the cookie
		join   []string // fields of the joining request
	}{
		{name: "vary cookie", fields: []string{"Cache-Control: max-age=60", "Vary: Cookie"}},
		{name: "private", fields: []string{"Cache-Control: private, max-age=60"}},
		{name: "no-store with set-cookie", fields: []string{"Cache-Control: no-store", "Set-Cookie: session=ALICE"}},
		{name: "vary accept-language", fields: []string{"Cache-Control: max-age=60", "Vary: Accept-Language"}, join: []string{"Accept-Language: fr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			o.set(respond(&o, 200, "public", "Cache-Control: max-age=10", `ETag: "1"`))
			h.get(t, "/p")
			release := make(chan struct{})
			o.set(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Cookie") == "" {
					w.Header().Set("Cache-Control", "max-age=60")
					io.WriteString(w, "anonymous")
					return
				}
				<-release
				for _, f := range tt.fields {
					name, value, _ := strings.Cut(f, ":")
					w.Header().Add(name, strings.TrimSpace(value))
				}
				io.WriteString(w, "alice's page")
			})
			h.clock.advance(time.Minute)
			alice := make(chan string, 1)
			go func() {
				_, body, err := h.try("GET", "/p", "Cookie: user=alice", "Accept-Language: en")
				if err != nil {
					body = err.Error()
				}
				alice <- body
			}()
			waitFor(t, "alice's revalidation at the origin", func() bool { return o.n.Load() == 2 })
			bob := make(chan string, 1)
			go func() {
				resp, body, err := h.try("GET", "/p", tt.join...)
				if err != nil {
					body = err.Error()
				} else {
					body += " " + resp.Header.Get("Set-Cookie")
				}
				bob <- body
			}()
			waitFor(t, "bob to join the revalidation", func() bool { return h.x.sharing() == 1 })
			close(release)
			if got := <-alice; got != "alice's page" {
				t.Errorf("alice got %q", got)
			}
			if got := <-bob; strings.Contains(got, "alice") || strings.Contains(got, "ALICE") {
				t.Errorf("bob got alice's answer: %q", got)
			}
		})
	}
}
