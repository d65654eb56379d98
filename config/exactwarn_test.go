package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// An exact match naming a directory that its files or php source serves
// is warned about, with the prefix to write instead; a match that is a
// file, a prefix, a pattern with parameters, or an exact match beside its
// prefix form is not.
func TestExactMatchOverTreeWarns(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"public/api/index.html":  "api\n",
		"public/docs/a.html":     "a\n",
		"public/page.html":       "page\n",
		"public/static/s/x.css":  "x\n",
		"public/both/index.html": "both\n",
		"inc.yaml":               "routes:\n  - match: /docs\n    pipeline: [files: public]\n",
	})
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"routes:\n  - match: /api\n    pipeline: [files: public]\n",
			[]string{`test.yaml:2:12: warning: match "/api" is exact: it takes /api alone, not the files under it in ` + filepath.Join(dir, "public", "api") + ` (files redirects /api to /api/, which this route does not match); write "/api/" to serve the tree, or [/api, /api/] for both`}},
		{"routes:\n  - match: [/page.html, /api/, /docs/, \"/{x}\"]\n    pipeline: [{files: {root: public}}, {compress: [gzip]}]\n", nil},
		{"routes:\n  - match: [/both, /s]\n    pipeline: [files: public]\n  - match: /both/\n    pipeline: [files: public]\n",
			nil}, // /s is not a directory under the root (static/s is)
		{"routes:\n  - match: /assets/s\n    pipeline: [{files: {root: public/static, strip_prefix: /assets}}]\n",
			[]string{`test.yaml:2:12: warning: match "/assets/s" is exact`}},
		{"routes:\n  - match: /api\n    pipeline: [{text: hi}]\n", nil},
		{"include: inc.yaml\nroutes: [{match: /, pipeline: [echo]}]\n",
			[]string{`inc.yaml:2:12: warning: match "/docs" is exact`}},
		{"sites:\n  - hosts: a\n    routes:\n      - match: [/api, /docs]\n        pipeline: [files: public]\n",
			[]string{`test.yaml:4:17: warning: match "/api" is exact`, `test.yaml:4:23: warning: match "/docs" is exact`}},
	} {
		checkWarnings(t, dir, tt.text, tt.want)
	}
}

// checkWarnings parses text in dir and checks that its warnings, with
// dir's path dropped, start with want's, in order.
func checkWarnings(t *testing.T, dir, text string, want []string) {
	t.Helper()
	cfg, err := parseString(t, dir, text)
	if err != nil {
		t.Errorf("%s: %v", text, err)
		return
	}
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, strings.TrimPrefix(w.String(), dir+string(filepath.Separator)))
	}
	if len(got) != len(want) {
		t.Errorf("%s\nwarnings:\n%s\nwant:\n%s", text, strings.Join(got, "\n"), strings.Join(want, "\n"))
		return
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s\nwarning:\n%s\nwant a prefix:\n%s", text, got[i], want[i])
		}
	}
}
