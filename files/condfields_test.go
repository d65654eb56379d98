package files_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// Conditional and Range fields are honoured whatever the case of their
// names, alone or among other fields, and a request without them gets
// the whole file.
func TestConditionalFieldsAnyCase(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "0123456789"})
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), past, past); err != nil {
		t.Fatal(err)
	}
	addr := hostOf(serveDir(t, dir, files.Options{}))
	first, _ := sluicetest.RoundTrip(t, addr, "GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n")
	etag, lastMod := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
	if etag == "" || lastMod == "" {
		t.Fatal("no ETag or Last-Modified")
	}
	for _, tc := range []struct {
		name, fields string
		status       int
		body         string
	}{
		{"none", "X-A: 1\r\n", 200, "0123456789"},
		{"if-none-match", "x-a: 1\r\nif-none-match: " + etag + "\r\n", 304, ""},
		{"IF-NONE-MATCH other", "IF-NONE-MATCH: \"other\"\r\n", 200, "0123456789"},
		{"If-Match other", "If-Match: \"other\"\r\n", 412, ""},
		{"if-modified-since", "if-modified-since: " + lastMod + "\r\n", 304, ""},
		{"range", "range: bytes=2-4\r\n", 206, "234"},
		{"RANGE and if-range", "RANGE: bytes=2-4\r\nif-range: " + etag + "\r\n", 206, "234"},
		{"range and if-range other", "Range: bytes=2-4\r\nIf-Range: \"other\"\r\n", 200, "0123456789"},
		{"If- alone", "If-Other: 1\r\n", 200, "0123456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sluicetest.RoundTrip(t, addr, "GET /a.txt HTTP/1.1\r\nHost: a\r\n"+tc.fields+"\r\n")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status != 412 && body != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
		})
	}
}
