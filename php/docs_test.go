package php_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// Every config in docs/php.md is one `sluice check` accepts: a complete
// file whose components build, with its directories (under /var/www/)
// made in a temporary directory.
func TestDocsConfigs(t *testing.T) {
	data, err := os.ReadFile("../docs/php.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) < 5 {
		t.Fatalf("%d yaml blocks in docs/php.md; want the intro's, WordPress, Laravel, the plain site and accel_redirect's", len(blocks))
	}
	dirs := regexp.MustCompile(`/var/www/[A-Za-z0-9_./-]*[A-Za-z0-9_]`)
	for i, b := range blocks {
		base := t.TempDir()
		text := b[1]
		if !strings.HasPrefix(text, "listen:") || !strings.Contains(text, "routes:") {
			t.Errorf("block %d is not a complete config:\n%s", i, text)
			continue
		}
		for _, d := range dirs.FindAllString(text, -1) {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		text = strings.ReplaceAll(text, "/var/www/", base+"/var/www/")
		loader := &config.Loader{Context: components.Context{Logger: slog.New(slog.DiscardHandler)}}
		cfg, err := loader.Parse(filepath.Join(base, "sluice.yaml"), []byte(text))
		if err != nil {
			t.Errorf("block %d:\n%s\n%v", i, b[1], err)
			continue
		}
		if len(cfg.Warnings) > 0 {
			t.Errorf("block %d: warnings %v", i, cfg.Warnings)
		}
		cfg.Close()
	}
}
