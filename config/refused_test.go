package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A request the engine refuses is written to the logs of the catch-all
// route, or, when it has none, to the first log in the file; a bad
// request line comes out escaped, with status 400 (issue 14, finding 8).
func TestLogRefusal(t *testing.T) {
	tests := []struct {
		name   string
		routes string // %s stands for the log directory
		want   []string
	}{
		{"the catch-all route's log", `
  - match: /api/
    pipeline: [{log: "%[1]s/api.log"}, {text: api}]
  - match: /
    pipeline: [{log: "%[1]s/main.log"}, {text: main}]`, []string{"main.log"}},
		{"the first log when the catch-all has none", `
  - match: /
    pipeline: [{text: main}]
  - match: /api/
    pipeline: [{log: "%[1]s/api.log"}, {text: api}]
  - match: /b/
    pipeline: [{log: "%[1]s/b.log"}, {text: b}]`, []string{"api.log"}},
		{"not a virtual host's", `
  - match: /
    host: a.example
    pipeline: [{log: "%[1]s/a.log"}, {text: a}]
  - match: /
    pipeline: [{log: "%[1]s/main.log"}, {text: main}]`, []string{"main.log"}},
		{"every catch-all route's", `
  - match: /
    methods: [GET]
    pipeline: [{log: "%[1]s/get.log"}, {text: get}]
  - match: [/, /x]
    methods: [POST]
    pipeline: [{log: "%[1]s/post.log"}, {text: post}]`, []string{"get.log", "post.log"}},
		{"no log at all", `
  - match: /
    pipeline: [{text: main}]`, nil},
		{"the server-wide access_log's alone", `
  - match: /
    pipeline: [{log: "%[1]s/main.log"}, {text: main}]
access_log: "%[1]s/access.log"`, []string{"access.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "routes:" + strings.ReplaceAll(tt.routes, "%[1]s", dir) + "\n"
			cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			srv := sluicetest.NewServer(t, cfg.Handler(),
				sluicetest.Configure(func(s *engine.Server) { s.OnRefused = cfg.LogRefusal }))
			out := srv.Exchange(t, "GET /\x1b[2J\x07 HTTP/1.1\r\nHost: a\r\n\r\n")
			if !strings.HasPrefix(out, "HTTP/1.1 400 ") {
				t.Fatalf("response %q, want 400", out)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			cfg.Close() // closes the logs, which write what is queued

			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			var got []string
			for _, f := range logs {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) == 0 {
					continue
				}
				got = append(got, filepath.Base(f))
				want := `"GET /\x1b[2J\x07 HTTP/1.1" 400 40 "-" "-"` + "\n"
				if !strings.HasPrefix(string(data), "127.0.0.1 - - [") || !strings.HasSuffix(string(data), want) {
					t.Errorf("%s: %q, want a line ending %q", filepath.Base(f), data, want)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("refusal logged in %q, want %q", got, tt.want)
			}
		})
	}
}
