package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The measure itself, on Sluice with workers (a few tunnels): each
// reload and the binary upgrade is applied, and every tunnel still
// echoes after them. With
// CI set, nginx and Caddy are measured too, and must be installed.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	up := httptest.NewServer(http.HandlerFunc(echo))
	defer up.Close()
	streamFor = 8 * time.Second
	files := t.TempDir()
	const size = 8 << 20
	if err := writeBig(filepath.Join(files, "big.bin"), size); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers(bin, up.URL, files) {
		isSluice := strings.HasPrefix(s.name, "sluice")
		if !isSluice && os.Getenv("CI") == "" {
			if _, err := s.version(); err != nil {
				continue
			}
		}
		t.Run(s.name, func(t *testing.T) {
			r := measure(s, 5, 2, size)
			if r.opened != 5 || !r.newOK {
				t.Fatalf("%+v: want 5 tunnels and every reload applied", r)
			}
			if isSluice && r.alive != 5 {
				t.Errorf("%d of 5 tunnels echo after the reloads", r.alive)
			}
			if isSluice && (r.events != "whole" || r.download != "whole") {
				t.Errorf("across the changes, the event stream %s, the download %s; want both whole", r.events, r.download)
			}
			if s.upgrade != nil && r.upgraded != "yes" {
				t.Errorf("upgrade %q, want yes", r.upgraded)
			}
			t.Logf("%d of %d echo; events %s, download %s; processes %d → %d", r.alive, r.opened, r.events, r.download, r.procs[0], r.procs[1])
		})
	}
}
