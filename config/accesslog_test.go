package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A route's log adds to access_log: a route log that does not say
// whether it replaces access_log gets a note, since it used to; one that
// writes access_log's own file without replacing it, a warning.
func TestAccessLogNotes(t *testing.T) {
	tests := []struct {
		name, routeLog string
		access         bool
		want           string // the warning's text, "" for none
	}{
		{"adds, unsaid", "{file: ./own.log}", true, "this route's requests are written to access_log too"},
		{"shorthand", "./own.log", true, "this route's requests are written to access_log too"},
		{"replace", "{file: ./own.log, replace: true}", true, ""},
		{"adds, said", "{file: ./own.log, replace: false}", true, ""},
		{"no access_log", "./own.log", false, ""},
		{"same file", "{file: ./access.log, replace: false}", true, "each request of this route would be written there twice"},
		{"same stream", "{file: stdout}", true, "each request of this route would be written there twice"},
		{"same file, replace", "{file: ./access.log, replace: true}", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			access := "access_log: ./access.log\n"
			if strings.Contains(tt.routeLog, "stdout") {
				access = "access_log: '-'\n"
			}
			if !tt.access {
				access = ""
			}
			src := access + "routes:\n  - match: /\n    pipeline:\n      - log: " + tt.routeLog + "\n      - text: hi\n"
			cfg, err := testLoader().Parse(filepath.Join(dir, "site.yaml"), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			defer cfg.Close()
			var got []string
			for _, w := range cfg.Warnings {
				got = append(got, w.String())
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("warnings %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "site.yaml:5:9: warning: log: ")):
				t.Errorf("warnings %q, want one at 5:9 saying %q", got, tt.want)
			}
		})
	}
}

// A route's log in an included file or a site is noted at its own place.
func TestAccessLogNotesIncluded(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "more.yaml")
	if err := os.WriteFile(inc, []byte("routes:\n  - match: /more\n    pipeline:\n      - log: ./more.log\n      - text: more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "access_log: ./access.log\nsites:\n  - hosts: example.com\n    routes:\n      - match: /\n        pipeline:\n          - log: ./site.log\n          - text: hi\n" +
		"routes:\n  - include: more.yaml\n"
	cfg, err := testLoader().Parse(filepath.Join(dir, "site.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, strings.TrimPrefix(w.String(), dir+string(filepath.Separator)))
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "site.yaml:7:13: warning: log: ") || !strings.HasPrefix(got[1], "more.yaml:4:9: warning: log: ") {
		t.Errorf("warnings:\n%s", strings.Join(got, "\n"))
	}
}
