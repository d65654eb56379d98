package files_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// TestREDbot runs REDbot (https://redbot.org, `pip install redbot`)
// against files the Server serves — small ones from memory, a large one
// by sendfile, one with a precompressed variant — and fails on any
// finding REDbot marks BAD. Without the redbot command it is skipped, or
// fails when CI is set (see sluicetest.NeedTool).
func TestREDbot(t *testing.T) {
	redbot := sluicetest.NeedTool(t, "redbot", "PyPI: pip install redbot")
	dir := t.TempDir()
	css := strings.Repeat("body { color: #333; margin: 0 auto; }\n", 3000)
	writeFiles(t, dir, map[string]string{
		"index.html": "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>REDbot</title></head>" +
			"<body><p>Hello.</p></body></html>\n",
		"big.txt":      strings.Repeat("REDbot reads this large file.\n", 20000),
		"style.css":    css,
		"style.css.gz": gzipped(t, css),
		"sub/a.txt":    "a",
	})
	old := time.Now().Add(-24 * time.Hour)
	for _, name := range []string{"index.html", "big.txt", "style.css"} {
		os.Chtimes(filepath.Join(dir, name), old, old)
	}
	for _, cfg := range []struct {
		name string
		opts files.Options
	}{
		{"default", files.Options{}},
		{"max-age", files.Options{MaxAge: time.Hour, NoSniff: true, Browse: true}},
	} {
		base := serveDir(t, dir, cfg.opts)
		for _, path := range []string{"/", "/index.html", "/big.txt", "/style.css", "/missing", "/sub/"} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err := exec.CommandContext(ctx, redbot, "-o", "har", base+path).Output()
			cancel()
			if err != nil {
				t.Fatalf("redbot %s: %v\n%s", path, err, out)
			}
			var har struct {
				Log struct {
					Entries []struct {
						Notes []redbotNote `json:"_red_messages"`
					} `json:"entries"`
				} `json:"log"`
			}
			if err := json.Unmarshal(out, &har); err != nil {
				t.Fatalf("redbot %s: %v in\n%s", path, err, out)
			}
			if len(har.Log.Entries) == 0 {
				t.Fatalf("redbot %s: no entries in\n%s", path, out)
			}
			for _, e := range har.Log.Entries {
				for _, n := range e.Notes {
					n.walk(func(n redbotNote) {
						switch strings.ToUpper(n.Level) {
						case "BAD":
							t.Errorf("%s %s: REDbot BAD: %s", cfg.name, path, n.Summary)
						case "WARN":
							t.Logf("%s %s: REDbot WARN: %s", cfg.name, path, n.Summary)
						}
					})
				}
			}
		}
	}
}

// redbotNote is a finding in REDbot's HAR output.
type redbotNote struct {
	Level    string       `json:"level"`
	Summary  string       `json:"summary"`
	Subnotes []redbotNote `json:"subnotes"`
}

func (n redbotNote) walk(fn func(redbotNote)) {
	fn(n)
	for _, s := range n.Subnotes {
		s.walk(fn)
	}
}
