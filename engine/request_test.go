package engine

import "testing"

// Repeated field lines read as one comma-joined list (RFC 9110 §5.3); a
// single field is returned as it is, without allocating.
func TestRequestHeaderList(t *testing.T) {
	var r Request
	n, err := parseHead([]byte("GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"a\"\r\nX: 1\r\nif-none-match: \"b\", \"c\"\r\nAccept: */*\r\n\r\n"), &r, func() *Limits { l := Limits{}.withDefaults(); return &l }(), new([]byte))
	if err != nil || n == 0 {
		t.Fatalf("parseHead: %d, %v", n, err)
	}
	for _, tt := range []struct{ name, want string }{
		{"If-None-Match", `"a", "b", "c"`},
		{"Accept", "*/*"},
		{"x", "1"},
		{"Missing", ""},
	} {
		if got := r.HeaderList(tt.name); string(got) != tt.want || (tt.want == "") != (got == nil) {
			t.Errorf("HeaderList(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { r.HeaderList("Accept") }); allocs != 0 {
		t.Errorf("HeaderList of a single field allocates %v times", allocs)
	}
}
