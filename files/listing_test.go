package files_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
)

// listingSite is a directory to list: files of different sizes and
// times, a hostile name, a subdirectory, dotfiles and a link out.
func listingSite(t *testing.T) (outer, dir string) {
	outer = t.TempDir()
	dir = filepath.Join(outer, "root")
	writeFiles(t, outer, map[string]string{
		"secret.txt":                      "secret",
		"root/pub/small.txt":              "1",
		"root/pub/big.txt":                strings.Repeat("x", 5000),
		"root/pub/mid.txt":                strings.Repeat("x", 100),
		"root/pub/<script>&\"x\" y.txt":   "hostile",
		"root/pub/a:b.txt":                "colon",
		"root/pub/sub/inner.txt":          "inner",
		"root/pub/.hidden":                "hidden",
		"root/.well-known/security.txt":   "contact",
		"root/withindex/index.html":       "the index",
		"root/withindex/other.txt":        "other",
		"root/pub/zzz-oldest.txt":         "old",
		"root/pub/sub/../../pub/keep.txt": "keep",
	})
	times := map[string]time.Duration{"small.txt": 3, "big.txt": 2, "mid.txt": 1, "zzz-oldest.txt": 10}
	for name, ago := range times {
		tm := time.Now().Add(-ago * time.Hour)
		os.Chtimes(filepath.Join(dir, "pub", name), tm, tm)
	}
	os.Symlink("../../secret.txt", filepath.Join(dir, "pub", "out.txt"))
	return outer, dir
}

func TestBrowseHTML(t *testing.T) {
	_, dir := listingSite(t)
	base := serveDir(t, dir, files.Options{Browse: true})
	resp, body := get(t, "GET", base+"/pub/")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /pub/ = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		"<title>Index of /pub/</title>",
		`<a href="./%3Cscript%3E&amp;%22x%22%20y.txt">&lt;script&gt;&amp;&#34;x&#34; y.txt</a>`,
		`<a href="./a:b.txt">a:b.txt</a>`,
		`<a href="./sub/">sub/</a>`,
		`<a href="../">../</a>`,
		`title="5000 bytes">4.9 KiB<`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("listing lacks %q:\n%s", want, body)
		}
	}
	for _, bad := range []string{"<script>", ".hidden", "out.txt", "secret"} {
		if strings.Contains(body, bad) {
			t.Errorf("listing contains %q:\n%s", bad, body)
		}
	}
	if resp.Header.Get("Vary") != "Accept" {
		t.Errorf("Vary %q, want Accept", resp.Header.Get("Vary"))
	}
	// A 304 has the Vary of the 200 it stands for (RFC 9110 §15.4.5).
	if resp, _ := get(t, "GET", base+"/pub/", "If-None-Match", "*"); resp.StatusCode != 304 || resp.Header.Get("Vary") != "Accept" {
		t.Errorf("GET /pub/ If-None-Match: * = %d with Vary %q, want 304 with Vary: Accept", resp.StatusCode, resp.Header.Get("Vary"))
	}
	// A directory with an index file serves it; the root lists
	// .well-known.
	if _, body := get(t, "GET", base+"/withindex/"); body != "the index" {
		t.Errorf("GET /withindex/ = %q", body)
	}
	if _, body := get(t, "GET", base+"/"); !strings.Contains(body, `href="./.well-known/"`) {
		t.Errorf("root listing lacks .well-known:\n%s", body)
	}
	// Without Browse: 404.
	base = serveDir(t, dir, files.Options{})
	if resp, _ := get(t, "GET", base+"/pub/"); resp.StatusCode != 404 {
		t.Errorf("GET /pub/ without Browse = %d, want 404", resp.StatusCode)
	}
}

func TestBrowseSortAndJSON(t *testing.T) {
	_, dir := listingSite(t)
	base := serveDir(t, dir, files.Options{Browse: true})
	names := func(query string) []string {
		resp, body := get(t, "GET", base+"/pub/"+query, "Accept", "application/json")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET /pub/%s = %d %q", query, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var items []struct {
			Name    string    `json:"name"`
			URL     string    `json:"url"`
			IsDir   bool      `json:"is_dir"`
			Size    int64     `json:"size"`
			ModTime time.Time `json:"mod_time"`
		}
		if err := json.Unmarshal([]byte(body), &items); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		var out []string
		for _, it := range items {
			if strings.HasSuffix(it.Name, ".txt") && strings.ContainsAny(it.Name[:1], "bmsz") || it.IsDir {
				out = append(out, it.Name)
			}
			if it.Name == "big.txt" && it.Size != 5000 {
				t.Errorf("big.txt: size %d", it.Size)
			}
		}
		return out
	}
	for query, want := range map[string]string{
		"":                       "sub big.txt mid.txt small.txt zzz-oldest.txt",
		"?sort=name&order=desc":  "sub zzz-oldest.txt small.txt mid.txt big.txt",
		"?sort=size":             "sub small.txt zzz-oldest.txt mid.txt big.txt",
		"?sort=size&order=desc":  "sub big.txt mid.txt zzz-oldest.txt small.txt",
		"?sort=time":             "sub zzz-oldest.txt small.txt big.txt mid.txt",
		"?sort=time&order=desc":  "sub mid.txt big.txt small.txt zzz-oldest.txt",
		"?sort=bogus&order=asc!": "sub big.txt mid.txt small.txt zzz-oldest.txt",
	} {
		if got := strings.Join(names(query), " "); got != want {
			t.Errorf("GET /pub/%s: order %q, want %q", query, got, want)
		}
	}
	// A browser's Accept gets HTML.
	resp, _ := get(t, "GET", base+"/pub/", "Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("browser Accept: Content-Type %q", resp.Header.Get("Content-Type"))
	}
	resp, _ = get(t, "GET", base+"/pub/", "Accept", "application/json;q=0.9, text/html;q=0.5")
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON preferred: Content-Type %q", resp.Header.Get("Content-Type"))
	}
	// Dotfiles are listed when allowed.
	base = serveDir(t, dir, files.Options{Browse: true, Dotfiles: files.DotfilesAllow})
	if _, body := get(t, "GET", base+"/pub/"); !strings.Contains(body, ".hidden") {
		t.Errorf("Dotfiles allow: listing lacks .hidden")
	}
}
