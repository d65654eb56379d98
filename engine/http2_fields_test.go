//lint:file-ignore SA1019 the tests drive x/net/http2's Framer on purpose.

package engine_test

import (
	"testing"

	"golang.org/x/net/http2"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A host or cookie field past Limits.MaxHeaderCount, which is not kept,
// is answered 431 like any field past it; the block's index of the host
// and count of cookies were of fields not kept, and the request's build
// indexed past them: a panic on the connection's goroutine, which ended
// the server process.
func TestHTTP2FieldsPastTheCount(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxHeaderCount: 2})
	get := []string{":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", "/", "x-a", "1", "x-b", "2"}
	for _, tt := range []struct {
		name  string
		extra []string
	}{
		{"host", []string{"host", "a.test"}},
		{"cookies", []string{"cookie", "a=1", "cookie", "b=2"}},
		{"none", []string{"x-c", "3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := rawH2(t, addr, ca, append(get[:len(get):len(get)], tt.extra...)...).(*http2.MetaHeadersFrame)
			if !ok || m.PseudoValue("status") != "431" {
				t.Errorf("answered %v, want 431", m)
			}
		})
	}
	m, ok := rawH2(t, addr, ca, get...).(*http2.MetaHeadersFrame)
	if !ok || m.PseudoValue("status") != "200" {
		t.Errorf("then answered %v, want 200", m)
	}
}
