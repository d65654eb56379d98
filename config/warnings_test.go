package config

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A valid config's warnings come with their positions: a health section
// with no workers to check, and what a component logs at Warn while it is built, which also
// reaches the Loader's logger as before.
func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.htpasswd"), []byte("alice:plaintext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	l := &Loader{Context: testLoader().Context}
	l.Context.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	cfg, err := l.Parse(filepath.Join(dir, "w.yaml"), []byte(`health: {timeout: 2s}
routes:
  - match: /
    pipeline:
      - basic_auth: {realm: r, htpasswd: ./users.htpasswd}
      - text: hi
`))
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, strings.TrimPrefix(w.String(), dir+string(filepath.Separator)))
	}
	if len(got) != 2 ||
		got[0] != "w.yaml:1:9: warning: "+HealthWarning ||
		!strings.HasPrefix(got[1], "w.yaml:5:9: warning: basic_auth: htpasswd lines without a hash Sluice verifies") ||
		!strings.Contains(got[1], ` file=`) || cfg.Warnings[1].Stage != "basic_auth" {
		t.Errorf("warnings:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(logged.String(), "level=WARN msg=\"basic_auth: htpasswd lines") {
		t.Errorf("the component's warning did not reach the loader's logger:\n%s", logged.String())
	}
}
