package cache

import (
	"bytes"
	"testing"
	"time"
)

// A meta survives its head: what is stored and what is derived from the
// fields again, for responses read from raw header values.
func TestHeadRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		fields []field
		want   func(m *meta) bool
	}{
		{"cache-control", []field{{"Cache-Control", "max-age=60, must-revalidate"}}, func(m *meta) bool {
			return m.cc.MaxAge == 60 && m.noStaleServing()
		}},
		{"cdn wins", []field{{"Cache-Control", "max-age=60"}, {"CDN-Cache-Control", "max-age=5"}}, func(m *meta) bool {
			return m.cc.MaxAge == 5
		}},
		{"validators", []field{{"ETag", `"x"`}, {"Last-Modified", "Sun, 06 Dec 2026 10:00:00 GMT"}}, func(m *meta) bool {
			return m.val.ETag == `"x"` && m.modTime().Equal(at.Add(-time.Hour))
		}},
		{"vary", []field{{"Vary", "X-B, accept-encoding"}, {"Vary", "X-A"}, {"Content-Encoding", "br"}}, func(m *meta) bool {
			return equalNames(m.vary, []string{"accept-encoding", "x-a", "x-b"}) && m.encoding == "br"
		}},
		{"no fields", nil, func(m *meta) bool { return m.vary == nil && m.cc.MaxAge < 0 }},
	} {
		m := &meta{status: 200, length: 12, fields: tc.fields, date: at, requestTime: at, responseTime: at.Add(time.Second),
			ageValue: 3 * time.Second, lifetime: time.Minute}
		got, _, _, err := decodeHead(encodeMeta(m))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.status != 200 || got.length != 12 || !got.date.Equal(at) || !got.responseTime.Equal(at.Add(time.Second)) ||
			got.ageValue != 3*time.Second || got.lifetime != time.Minute || len(got.fields) != len(tc.fields) || !tc.want(got) {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	_, gen, names, err := decodeHead(encodeVary(1<<63+5, []string{"accept-encoding", "cookie"}))
	if err != nil || gen != 1<<63+5 || !equalNames(names, []string{"accept-encoding", "cookie"}) {
		t.Errorf("vary marker: %d %q %v", gen, names, err)
	}
}

// Heads that are not the cache's are rejected.
func TestHeadRejects(t *testing.T) {
	good := encodeMeta(&meta{status: 200, length: -1, fields: []field{{"A", "b"}}})
	bad := map[string][]byte{
		"empty":         nil,
		"magic":         append([]byte("XLCH"), good[4:]...),
		"version":       append(append([]byte("SLCH"), 2), good[5:]...),
		"kind":          append(append([]byte("SLCH"), 1, 'Z'), good[6:]...),
		"truncated":     good[:len(good)-1],
		"trailing":      append(bytes.Clone(good), 0),
		"bad name":      encodeMeta(&meta{status: 200, fields: []field{{"A B", "b"}}}),
		"line break":    encodeMeta(&meta{status: 200, fields: []field{{"A", "b\r\nX: y"}}}),
		"status":        encodeMeta(&meta{status: 99}),
		"vary star":     encodeMeta(&meta{status: 200, fields: []field{{"Vary", "*"}}}),
		"marker empty":  encodeVary(1, nil),
		"marker break":  encodeVary(1, []string{"a\nb"}),
		"huge count":    append([]byte("SLCH\x01V\x01"), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"length < -1":   encodeMeta(&meta{status: 200, length: -2}),
		"field overrun": append([]byte("SLCH\x01R"), 200, 1, 1, 0, 0, 0, 0, 0, 1, 50, 'A'),
	}
	for name, b := range bad {
		if m, _, names, err := decodeHead(b); err == nil {
			t.Errorf("%s: decoded %+v %q", name, m, names)
		}
	}
}

// The decoder never panics, and what it accepts encodes to a head that
// decodes to the same.
func FuzzHead(f *testing.F) {
	f.Add(encodeMeta(&meta{status: 200, length: 5, fields: []field{{"Cache-Control", "max-age=5"}, {"Vary", "a"}}}))
	f.Add(encodeVary(7, []string{"accept-encoding"}))
	f.Add([]byte("SLCH\x01R"))
	encode := func(m *meta, gen uint64, names []string) []byte {
		if m != nil {
			return encodeMeta(m)
		}
		return encodeVary(gen, names)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, gen, names, err := decodeHead(b)
		if err != nil {
			return
		}
		once := encode(m, gen, names)
		m, gen, names, err = decodeHead(once)
		if err != nil {
			t.Fatalf("%q: its encoding %q: %v", b, once, err)
		}
		if twice := encode(m, gen, names); !bytes.Equal(once, twice) {
			t.Fatalf("%q encodes as %q, then %q", b, once, twice)
		}
	})
}
