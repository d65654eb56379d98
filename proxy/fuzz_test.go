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

// FuzzLastHead: a head taken from the last one (lastHead) is the head
// that parsing its bytes afresh gives. a is the head remembered, b the
// bytes read next; whenever b repeats a, parsing b must give a's head,
// field by field.
func FuzzLastHead(f *testing.F) {
	for _, r := range goodResponses {
		f.Add([]byte(r), []byte(r))
		f.Add([]byte(r), []byte(r+"HTTP/1.1 204 No Content\r\n\r\n"))
	}
	f.Add([]byte(goodResponses[0]), []byte(badResponses[0].resp))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var h responseHead
		n, err := parseResponseHead(a, &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
		if err != nil {
			return
		}
		var l lastHead
		l.remember(a[:n], &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
		for i := range a {
			a[i] = 0 // the read buffer, reused
		}
		if !l.repeats(b, DefaultMaxHeaderBytes, DefaultMaxHeaderCount) {
			return
		}
		var fresh responseHead
		m, err := parseResponseHead(b, &fresh, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
		if err != nil || m != len(l.raw) {
			t.Fatalf("b repeats the last head (%d bytes) but parses to %d bytes, %v", len(l.raw), m, err)
		}
		var got responseHead
		got.copyFrom(&l.head)
		if got.status != fresh.status || got.protoMinor != fresh.protoMinor || string(got.reason) != string(fresh.reason) ||
			got.contentLength != fresh.contentLength || got.chunked != fresh.chunked || got.close != fresh.close ||
			len(got.fields) != len(fresh.fields) {
			t.Fatalf("last head %+v, parsed afresh %+v", got, fresh)
		}
		for i := range got.fields {
			if string(got.fields[i].name) != string(fresh.fields[i].name) || string(got.fields[i].value) != string(fresh.fields[i].value) {
				t.Fatalf("field %d: last head %q: %q, afresh %q: %q", i, got.fields[i].name, got.fields[i].value, fresh.fields[i].name, fresh.fields[i].value)
			}
		}
	})
}
