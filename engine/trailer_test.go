package engine_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Trailer fields added with AddTrailer follow a chunked body: one that
// outgrew the buffer, or a short one whose header announced them with a
// Trailer field. A response with a known length drops them.
func TestResponseTrailers(t *testing.T) {
	srv := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if r.Path[1] != 'u' { // /announced, /long
			w.Header().Set("Trailer", "X-Sum")
		}
		n := 10
		if string(r.Path) == "/long" {
			n = 1 << 20
		}
		w.Write([]byte(strings.Repeat("x", n)))
		w.Header().AddTrailer("X-Sum", "abc")
		w.Header().AddTrailer("X-Count", "1")
	}))
	for _, c := range []struct {
		path    string
		chunked bool
	}{{"/announced", true}, {"/long", true}, {"/unannounced", false}} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := resp.Trailer.Get("X-Sum") + "," + resp.Trailer.Get("X-Count")
		want := ","
		if c.chunked {
			want = "abc,1"
		}
		if got != want || (resp.ContentLength < 0) != c.chunked {
			t.Errorf("%s: trailers %q (length %d), want %q", c.path, got, resp.ContentLength, want)
		}
	}
}
