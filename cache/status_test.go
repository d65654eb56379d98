package cache

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// intern gives back the value it was given, shared when a slot holds it
// and never another value, even when values collide in their slot.
func TestStatusStringsIntern(t *testing.T) {
	var ss statusStrings
	vals := make([]string, 100) // more values than slots
	for i := range vals {
		vals[i] = "Sluice; fwd=uri-miss; fwd-status=200; stored; ttl=" + strconv.Itoa(i)
	}
	for round := range 3 {
		for _, v := range vals {
			if got := ss.intern([]byte(v)); got != v {
				t.Fatalf("round %d: intern(%q) = %q", round, v, got)
			}
		}
	}
	v := []byte("Sluice; fwd=miss; fwd-status=200; ttl=600")
	first := ss.intern(v)
	if n := testing.AllocsPerRun(100, func() {
		if ss.intern(v) != first {
			t.Fatal("a value changed")
		}
	}); n != 0 {
		t.Errorf("intern of the value in its slot allocates %v, want 0", n)
	}
}

// httpDate is the Date of its second, formatted once for the second.
func TestHTTPDate(t *testing.T) {
	x, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 7, 2, 30, 0, 0, time.FixedZone("X", 3600))
	for _, d := range []time.Duration{0, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, -time.Second, 86400 * time.Second} {
		at := base.Add(d)
		if got, want := x.httpDate(at), at.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("httpDate(%v) = %q, want %q", at, got, want)
		}
	}
	at := base.Add(3 * time.Second)
	x.httpDate(at)
	if n := testing.AllocsPerRun(100, func() { x.httpDate(at.Add(500 * time.Millisecond)) }); n != 0 {
		t.Errorf("httpDate within its second allocates %v, want 0", n)
	}
}
