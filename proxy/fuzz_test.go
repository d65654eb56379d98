package proxy

import "testing"

// FuzzResponse feeds arbitrary bytes to the upstream response reader: it
// must never panic, and whatever it accepts, net/http's http.ReadResponse
// must read alike — the same status, fields and body (see differential).
// It is never laxer than net/http; it is stricter where RFC 9112 allows a
// recipient to be (CL with TE, obs-fold, bare CR, mixed line ends).
func FuzzResponse(f *testing.F) {
	for _, r := range goodResponses {
		f.Add([]byte(r))
	}
	for _, c := range badResponses {
		if len(c.resp) < 1024 {
			f.Add([]byte(c.resp))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		differential(t, data)
	})
}
