package engine

import (
	"testing"
	"time"
)

// The Date value HTTP/2 sends is the HTTP/1.x line's, from the one
// cache: without the name and CRLF, and reused within a second without
// allocating.
func TestDateValueIsTheLinesValue(t *testing.T) {
	saved := cachedDate.Load()
	defer cachedDate.Store(saved)
	cachedDate.Store(nil)
	const now = 1_700_000_000 * int64(time.Second)
	if got, want := dateValue(now), "Tue, 14 Nov 2023 22:13:20 GMT"; got != want {
		t.Fatalf("dateValue = %q, want %q", got, want)
	}
	if got, want := string(appendDate(nil, now+int64(time.Second)/2)), "Date: "+dateValue(now)+"\r\n"; got != want {
		t.Errorf("appendDate = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = dateValue(now) }); n != 0 {
		t.Errorf("dateValue allocates %v times within a second", n)
	}
}
