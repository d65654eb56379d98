package engine

import (
	"strings"
	"testing"
)

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

// AddField appends in order, keeps the slices it is given, and grows the
// slice past its capacity.
func TestAddField(t *testing.T) {
	r := &Request{Fields: make([]Field, 0, 1)}
	name := []byte("X-A")
	r.AddField(name, []byte("1"))
	r.AddField([]byte("X-B"), []byte("2"))
	r.AddField([]byte("X-A"), []byte("3"))
	var got []string
	for _, f := range r.Fields {
		got = append(got, string(f.Name)+"="+string(f.Value))
	}
	if strings.Join(got, " ") != "X-A=1 X-B=2 X-A=3" {
		t.Fatalf("fields %q", got)
	}
	if &r.Fields[0].Name[0] != &name[0] {
		t.Error("AddField copied the name")
	}
	r.reset()
	r.AddField([]byte("X-C"), []byte("4"))
	if len(r.Fields) != 1 || string(r.Fields[0].Value) != "4" {
		t.Errorf("after reset: %q", r.Fields)
	}
}
