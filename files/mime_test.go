package files

import (
	"strings"
	"testing"
)

func TestTypeByName(t *testing.T) {
	for name, want := range map[string]string{
		"a.html":       "text/html; charset=utf-8",
		"A.HTM":        "text/html; charset=utf-8",
		"x/y.css":      "text/css; charset=utf-8",
		"m.mjs":        "text/javascript; charset=utf-8",
		"f.woff2":      "font/woff2",
		"noext":        "application/octet-stream",
		"x.nosuchtype": "application/octet-stream",
		"dir.d/noext":  "application/octet-stream",
	} {
		if got := typeByName(name); got != want {
			t.Errorf("typeByName(%q) = %q, want %q", name, got, want)
		}
	}
	for ext, typ := range types {
		if strings.HasPrefix(typ, "text/") && !strings.HasSuffix(typ, "; charset=utf-8") {
			t.Errorf("types[%q] = %q lacks charset=utf-8", ext, typ)
		}
	}
}
