package httpgrammar

import "testing"

func TestNegotiate(t *testing.T) {
	codings := []string{"br", "zstd", "gzip", "identity"}
	media := []string{"text/html", "application/json"}
	tests := []struct {
		list   string
		offers []string
		want   int
	}{
		// Accept-Encoding.
		{"", codings, 3},
		{"gzip", codings, 2},
		{"x-gzip", codings, 2},
		{"GZIP", codings, 2},
		{"gzip, deflate, br", codings, 0}, // the server's order breaks the tie
		{"zstd, gzip", codings, 1},
		{"br;q=0.5, gzip;q=0.8, zstd;q=0.9", codings, 1},
		{"br;q=0, gzip", codings, 2},
		{"*", codings, 0},
		{"*;q=0.5, gzip", codings, 2},
		{"*;q=0", codings, -1},
		{"*;q=0, identity", codings, 3},
		{"identity;q=0", codings, -1},
		{"identity;q=0, gzip;q=0.1", codings, 2},
		{"identity, gzip;q=0.5", codings, 3},
		{"identity;q=0.5, gzip;q=0.5", codings, 2},               // a coding ties with identity listed last
		{"gzip;q=0.3, *;q=0.5", codings, 0},                      // br through "*"
		{"gzip;q=0.3, *;q=0.5", []string{"gzip", "identity"}, 1}, // "*" rates identity
		{"gzip;q=0.001", codings, 2},
		{"deflate", codings, 3},
		{"gzip;q=1.001", codings, 3}, // malformed weight: element ignored
		{"gzip;q=2, br;q=0.1", codings, 0},
		{"gzip;q=", codings, 3},
		{"gzip;q= 0.5", codings, 3},
		{"gzip ;q=0.5", codings, 2},
		{"gzip; Q=0.3 , br;q=0.2", codings, 2},
		{"gzip;level=1;q=0.7, br;q=0.6", codings, 2},
		{"gzip;q=0.7;q=0", codings, 2}, // the first q counts
		{"gzip;q=0, gzip", codings, 2}, // equally specific: the highest
		{" , ,gzip", codings, 2},
		{"g zip, br", codings, 0}, // not a token: ignored
		{"gzip/*", codings, 3},
		{"*/*", codings, 3}, // a media range does not match a coding
		{"compress", []string{"x-compress"}, -1},
		{"x-compress", []string{"compress"}, 0},
		{"x-br", codings, 3},
		// Accept.
		{"", media, -1},
		{"application/json", media, 1},
		{"text/html, application/json", media, 0},
		{"application/json, text/html;q=0.9", media, 1},
		{"*/*", media, 0},
		{"application/*, text/html;q=0.5", media, 1},
		{"text/*;q=0.2, application/json;q=0.1, */*", media, 0},
		{"*/*;q=0.1, application/json, text/html;q=0", media, 1},
		{"TEXT/HTML;level=1;q=0.5, application/json;q=0.4", media, 0},
		{"*", media, -1}, // not a media range
		{"text, application/json", media, 1},
		{"text/*/html, application/json;q=0.1", media, 1},
		{"*/json", media, -1},
		{"application/json;q=0.5x, text/html;q=0.1", media, 0},
	}
	for _, tt := range tests {
		if got := Negotiate(tt.list, tt.offers); got != tt.want {
			t.Errorf("Negotiate(%q, %q) = %d, want %d", tt.list, tt.offers, got, tt.want)
		}
		if got := Negotiate([]byte(tt.list), tt.offers); got != tt.want {
			t.Errorf("Negotiate([]byte(%q), %q) = %d, want %d", tt.list, tt.offers, got, tt.want)
		}
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"gzip, br;q=0.5", "*;q=0, identity;q=0", "br;q=0.999,gzip;q=1.000",
		"text/*;q=0.2, */*", "x-gzip;a=b;q=0"} {
		f.Add(s)
	}
	offers := []string{"br", "gzip", "identity", "text/html", "application/json"}
	f.Fuzz(func(t *testing.T, list string) {
		got := Negotiate(list, offers)
		if got < 0 {
			for _, o := range offers {
				if rate(list, o) > 0 {
					t.Fatalf("Negotiate(%q) chose none, but %s rates %d", list, o, rate(list, o))
				}
			}
			return
		}
		q := rate(list, offers[got])
		if q <= 0 || q > 1000 {
			t.Fatalf("Negotiate(%q) chose %s at weight %d", list, offers[got], q)
		}
		for i, o := range offers {
			if r := rate(list, o); r > q || r == q && i < got {
				t.Fatalf("Negotiate(%q) chose %s (%d) over %s (%d)", list, offers[got], q, o, r)
			}
		}
		if Negotiate([]byte(list), offers) != got {
			t.Fatalf("Negotiate(%q) differs for []byte", list)
		}
	})
}
