package conditional

import "testing"

func TestMatchETag(t *testing.T) {
	const tag = `"abc"`
	tests := []struct {
		list        string
		etag        string
		weak, match bool
	}{
		{`"abc"`, tag, true, true},
		{`"abc"`, tag, false, true},
		{`W/"abc"`, tag, true, true},
		{`W/"abc"`, tag, false, false},
		{`"abc"`, `W/"abc"`, true, true},
		{`"abc"`, `W/"abc"`, false, false},
		{`"x", "abc"`, tag, false, true},
		{`"x",W/"y" ,	"abc"`, tag, true, true},
		{`"abcd"`, tag, true, false},
		{`"ab"`, tag, true, false},
		{`*`, tag, false, true},
		{`*`, "", true, true},
		{`"abc`, tag, true, false},
		{`abc`, tag, true, false},
		{`W/`, tag, true, false},
		{``, tag, true, false},
		{`""`, "", true, false},
		{`"x", bad, "abc"`, tag, true, false},
	}
	for _, tt := range tests {
		if got := MatchETag([]byte(tt.list), tt.etag, tt.weak); got != tt.match {
			t.Errorf("MatchETag(%q, %q, weak=%v) = %v, want %v", tt.list, tt.etag, tt.weak, got, tt.match)
		}
	}
}

func FuzzMatchETag(f *testing.F) {
	f.Add(`"x", W/"abc"`, `"abc"`)
	f.Add(`W/`, `W/"a"`)
	f.Fuzz(func(t *testing.T, list, etag string) {
		if MatchETag([]byte(list), etag, false) && !MatchETag([]byte(list), etag, true) {
			t.Fatalf("%q matches %q strongly but not weakly", list, etag)
		}
	})
}
