package components

import (
	"github.com/sluice-server/sluice/sluicetest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
)

// The three negotiations agree: the same Accept-Encoding or Accept list,
// over the same two offers, gets the same verdict from the files source's
// choice of a precompressed variant, its choice of a listing format, and
// the compress filter's choice of a coding, each asked over a socket. A
// row names the server's first offer A, its second B and the wildcard *:
// for codings A is zstd and B gzip (files precompressed [zstd, gzip],
// compress [zstd, gzip]) and "none" is identity; for the listing A is
// text/html and B application/json, * is */*, and "none" falls back to
// HTML, so it reads as A.
func TestNegotiationsAgree(t *testing.T) {
	css := strings.Repeat("p { color: red }\n", 100)
	dir := filesTree(t, map[string]string{
		"page.css": css, "page.css.zst": "zstd bytes", "page.css.gz": "gzip bytes", "list/a.txt": "a",
	})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "page.css"), old, old)
	filesURL := filesServe(t, filesNew(t, FilesOptions{Root: dir, Options: files.Options{Browse: true, Precompressed: []string{"zstd", "gzip"}}}))
	compressURL := filesServe(t, pipe.Chain{
		compressBody([]byte(css), "text/css", true, nil),
		compressNew(t, CompressOptions{Encodings: []string{"zstd", "gzip"}}),
	})
	coding := map[string]string{"zstd": "A", "gzip": "B", "": "none"}
	tests := []struct {
		list string
		want string // A, B or none
	}{
		{"A", "A"},
		{"B", "B"},
		{"A, B", "A"},                 // a tie: the server's order
		{"B, A", "A"},                 // not the client's
		{"A;q=0.5, B", "B"},           // the higher weight
		{"B;q=0.5, A;q=0.4", "B"},     //
		{"B;q=0.001", "B"},            // the lowest weight still accepts
		{"*", "A"},                    // the wildcard: the first offer
		{"*;q=0.5, B", "B"},           // the named offer over the wildcard
		{"B;q=0.3, *;q=0.5", "A"},     // the wildcard rates A above B
		{"A;q=0, *", "B"},             // all but A
		{"*;q=0", "none"},             // nothing
		{"A;q=0, B;q=0", "none"},      //
		{"A;Q=0.3, B;q=0.2", "A"},     // Q in capitals
		{"A;x=y;q=0.3, B;q=0.2", "A"}, // other parameters ignored
		{" , ,B", "B"},                // empty elements skipped
		{"A;q=2, B;q=0.1", "B"},       // malformed weight: element ignored
		{"A;q= 0.5, B;q=0.1", "B"},    // (compress read this as 0.5)
		{"A;q=0.5x, B;q=0.1", "B"},    //
		{"A B, B;q=0.1", "B"},         // malformed name: element ignored
		// "*" rates identity too (files gave identity 0.001 here).
		{"A;q=0.3, B;q=0.3, *;q=0.5", "none"},
	}
	for _, tt := range tests {
		ae := strings.NewReplacer("A", "zstd", "B", "gzip").Replace(tt.list)
		resp, _ := sluicetest.Get(t, filesURL+"/page.css", "Accept-Encoding", ae)
		if got := coding[resp.Header.Get("Content-Encoding")]; got != tt.want {
			t.Errorf("files, Accept-Encoding %q: %s, want %s", ae, got, tt.want)
		}
		resp, _ = sluicetest.Get(t, compressURL+"/", "Accept-Encoding", ae)
		if got := coding[resp.Header.Get("Content-Encoding")]; got != tt.want {
			t.Errorf("compress, Accept-Encoding %q: %s, want %s", ae, got, tt.want)
		}
		accept := strings.NewReplacer("A", "text/html", "B", "application/json", "*", "*/*").Replace(tt.list)
		resp, _ = sluicetest.Get(t, filesURL+"/list/", "Accept", accept)
		got, want := "A", tt.want
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			got = "B"
		}
		if want == "none" {
			want = "A"
		}
		if resp.StatusCode != 200 || got != want {
			t.Errorf("listing, Accept %q: %d %s, want %s", accept, resp.StatusCode, got, want)
		}
	}
}
