package files_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

func gzipped(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.String()
}

// precompressedSite has a.css with .br, .zst and .gz variants, big.js
// (sent from disk) with a large .gz, and stale.js whose .gz is older.
func precompressedSite(t *testing.T) (dir string, css, bigJS string) {
	dir = t.TempDir()
	css = strings.Repeat("body{color:red}\n", 200)
	bigJS = strings.Repeat("console.log(1234567890);\n", 12000) // 300 kB
	writeFiles(t, dir, map[string]string{
		"a.css": css, "a.css.br": "BR:" + css[:100], "a.css.zst": "ZSTD:" + css[:100], "a.css.gz": gzipped(t, css),
		"big.js": bigJS, "big.js.gz": gzipped(t, bigJS) + strings.Repeat("\x00", 100<<10), // large enough for sendfile
		"stale.js": "new", "stale.js.gz": "old",
	})
	past := time.Now().Add(-time.Hour)
	for _, name := range []string{"a.css", "big.js", "stale.js.gz"} {
		os.Chtimes(filepath.Join(dir, name), past, past)
	}
	return dir, css, bigJS
}

func TestPrecompressed(t *testing.T) {
	dir, _, bigJS := precompressedSite(t)
	base := serveDir(t, dir, files.Options{})
	plain, _ := sluicetest.Get(t, base+"/a.css")
	etags := map[string]string{"": plain.Header.Get("ETag")}
	for _, tt := range []struct {
		ae, enc, bodyPrefix, file string
	}{
		{"br", "br", "BR:", "a.css.br"},
		{"zstd", "zstd", "ZSTD:", "a.css.zst"},
		{"gzip", "gzip", "\x1f\x8b", "a.css.gz"},
		{"gzip, deflate, br, zstd", "br", "BR:", "a.css.br"},
		{"gzip;q=1, br;q=0.5", "gzip", "\x1f\x8b", "a.css.gz"},
		{"identity", "", "body{", "a.css"},
		{"deflate", "", "body{", "a.css"},
	} {
		resp, body := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", tt.ae)
		want, _ := os.ReadFile(filepath.Join(dir, tt.file))
		if resp.StatusCode != 200 || body != string(want) || resp.Header.Get("Content-Encoding") != tt.enc {
			t.Errorf("Accept-Encoding %q = %d, Content-Encoding %q, %d bytes; want %q, %s",
				tt.ae, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(body), tt.enc, tt.file)
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("Accept-Encoding %q: Vary %q, Content-Type %q", tt.ae, resp.Header.Get("Vary"), resp.Header.Get("Content-Type"))
		}
		if resp.ContentLength != int64(len(want)) {
			t.Errorf("Accept-Encoding %q: Content-Length %d, want %d", tt.ae, resp.ContentLength, len(want))
		}
		if old, seen := etags[tt.enc]; seen && old != resp.Header.Get("ETag") {
			t.Errorf("Accept-Encoding %q: ETag %q, earlier %q", tt.ae, resp.Header.Get("ETag"), old)
		}
		etags[tt.enc] = resp.Header.Get("ETag")
	}
	// Every variant has an ETag of its own.
	seen := map[string]bool{}
	for enc, tag := range etags {
		if tag == "" || seen[tag] {
			t.Errorf("coding %q: ETag %q is empty or shared", enc, tag)
		}
		seen[tag] = true
	}
	// Revalidation is per variant: the br tag matches only the br variant.
	if resp, _ := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", "br", "If-None-Match", etags["br"]); resp.StatusCode != 304 ||
		resp.Header.Get("Vary") != "Accept-Encoding" || resp.Header.Get("ETag") != etags["br"] {
		t.Errorf("br revalidation = %d, Vary %q", resp.StatusCode, resp.Header.Get("Vary"))
	}
	if resp, _ := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", "gzip", "If-None-Match", etags["br"]); resp.StatusCode != 200 {
		t.Errorf("br tag revalidating the gzip variant = %d, want 200", resp.StatusCode)
	}
	// Ranges are of the variant.
	resp, body := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", "br", "Range", "bytes=0-2")
	if resp.StatusCode != 206 || body != "BR:" || resp.Header.Get("Content-Encoding") != "br" {
		t.Errorf("range of the br variant = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Encoding"))
	}
	// A large variant goes out from disk, whole.
	resp, body = sluicetest.Get(t, base+"/big.js", "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("big.js gzip: %v, Content-Encoding %q", err, resp.Header.Get("Content-Encoding"))
	}
	zr.Multistream(false)
	if got, _ := io.ReadAll(zr); string(got) != bigJS {
		t.Errorf("big.js gzip variant decodes to %d bytes, want %d", len(got), len(bigJS))
	}
	// A variant older than its original is not served.
	if resp, body := sluicetest.Get(t, base+"/stale.js", "Accept-Encoding", "gzip"); body != "new" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("stale variant: %q, Content-Encoding %q", body, resp.Header.Get("Content-Encoding"))
	}
	// A variant asked for by its own name is a plain file.
	if resp, _ := sluicetest.Get(t, base+"/a.css.gz", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" ||
		resp.Header.Get("Content-Type") != "application/gzip" {
		t.Errorf("GET /a.css.gz: Content-Encoding %q, Content-Type %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
	}
}

func TestPrecompressedOff(t *testing.T) {
	dir, css, _ := precompressedSite(t)
	base := serveDir(t, dir, files.Options{Precompressed: []string{}})
	resp, body := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", "br, gzip")
	if body != css || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "" {
		t.Errorf("Precompressed off: Content-Encoding %q, Vary %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
	base = serveDir(t, dir, files.Options{Precompressed: []string{"gzip"}})
	if resp, _ := sluicetest.Get(t, base+"/a.css", "Accept-Encoding", "br, gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Precompressed [gzip]: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}
