package php

import (
	"strings"
	"testing"
)

// The path classifiers agree with a plain reading of the path: a
// dotfile segment is found wherever it is (but a first .well-known),
// and the script's name ends after the first segment ending in .php.
func FuzzClassify(f *testing.F) {
	for _, p := range []string{"/", "/a.php/b", "/x/.env", "/.well-known/a", "/.well-known/.x", "/a/.well-known", "/.php", "/a.php.php/x.php", "/A.PHP", "/a.phpx/b.php"} {
		f.Add(p)
	}
	s := &Site{split: []string{".php"}}
	s.source = append(append([]string(nil), sourceExts...), s.split...)
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") {
			return
		}
		segs := strings.Split(p[1:], "/")
		dot := false
		for i, seg := range segs {
			if strings.HasPrefix(seg, ".") && !(i == 0 && seg == ".well-known") {
				dot = true
			}
		}
		if got := hasDotSegment([]byte(p)); got != dot {
			t.Errorf("hasDotSegment(%q) = %v, want %v", p, got, dot)
		}
		want, at := -1, 0
		for _, seg := range segs {
			at += 1 + len(seg)
			if len(seg) > len(".php") && strings.HasSuffix(seg, ".php") {
				want = at
				break
			}
		}
		if got := s.scriptEnd([]byte(p)); got != want {
			t.Errorf("scriptEnd(%q) = %d, want %d", p, got, want)
		}
		last := segs[len(segs)-1]
		if strings.HasSuffix(strings.ToLower(last), ".php") && len(last) > 4 && !s.sourceBytes(lastSegment([]byte(p))) {
			t.Errorf("%q is not taken for PHP source", p)
		}
	})
}
