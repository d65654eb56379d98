package files

import (
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

func TestNegotiate(t *testing.T) {
	orig := &entry{name: "a.css"}
	br := &entry{name: "a.css.br", encoding: "br"}
	zst := &entry{name: "a.css.zst", encoding: "zstd"}
	gz := &entry{name: "a.css.gz", encoding: "gzip"}
	orig.variants = []*entry{br, zst, gz}
	onlyGz := &entry{name: "b.css", variants: []*entry{gz}}
	tests := []struct {
		ae   string
		e    *entry
		want *entry
	}{
		{"", orig, orig}, // an empty field: no coding wanted
		{"gzip", orig, gz},
		{"x-gzip", orig, gz},
		{"GZIP", orig, gz},
		{"gzip, deflate, br", orig, br}, // server order breaks the tie
		{"gzip, deflate, br, zstd", orig, br},
		{"zstd, gzip", orig, zst},
		{"br;q=0.5, gzip;q=0.8", orig, gz},
		{"br;q=0.5, gzip;q=0.8, zstd;q=0.9", orig, zst},
		{"br;q=0", orig, orig},
		{"br;q=0, gzip", orig, gz},
		{"*", orig, br},
		{"*;q=0.5, gzip", orig, gz},
		{"*;q=0", orig, orig}, // nothing acceptable: the original, not an error
		{"identity;q=0", orig, orig},
		{"identity;q=0, gzip;q=0.1", orig, gz},
		{"identity, gzip;q=0.5", orig, orig}, // identity preferred
		{"identity;q=0.5, gzip;q=0.5", orig, gz},
		{"deflate", orig, orig},
		{"br", onlyGz, onlyGz},
		{"gzip;q=1.0", orig, gz},
		{"gzip;q=1.001", orig, orig}, // malformed weight: element ignored
		{"gzip;q=2", orig, orig},
		{"gzip;q=", orig, orig},
		{"gzip; Q=0.3 , br;q=0.2", orig, gz},
		{"gzip;level=1;q=0.7, br;q=0.6", orig, gz},
		{" , ,gzip", orig, gz},
		{"br;q=0.000, gzip;q=0.001", orig, gz},
		{"gzip;q=0.3, *;q=0.5", onlyGz, onlyGz}, // "*" rates identity, as in compress
		{"gzip;q= 0.5", orig, orig},             // not a qvalue: element ignored
	}
	for _, tt := range tests {
		if got := negotiate([]byte(tt.ae), tt.e); got != tt.want {
			t.Errorf("negotiate(%q) = %s, want %s", tt.ae, got.name, tt.want.name)
		}
	}
	if got := negotiate(nil, orig); got != orig {
		t.Errorf("negotiate without Accept-Encoding = %s, want the original", got.name)
	}
	allocs := testing.AllocsPerRun(100, func() { negotiate([]byte("gzip, deflate, br;q=0.9, zstd;q=0.8"), orig) })
	if allocs != 0 {
		t.Errorf("negotiate allocates %v times", allocs)
	}
}

func FuzzNegotiate(f *testing.F) {
	f.Add("gzip, br;q=0.5")
	f.Add("*;q=0, identity;q=0")
	f.Add("br;q=0.999,gzip;q=1.000")
	orig := &entry{name: "a"}
	orig.variants = []*entry{{name: "a.br", encoding: "br"}, {name: "a.gz", encoding: "gzip"}}
	f.Fuzz(func(t *testing.T, ae string) {
		got := negotiate([]byte(ae), orig)
		if got != orig && httpgrammar.Negotiate(ae, []string{got.encoding}) != 0 {
			t.Fatalf("negotiate(%q) chose %s, which the field refuses", ae, got.name)
		}
	})
}
