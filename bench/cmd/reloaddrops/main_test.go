package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The measure itself, on Sluice with workers (a few tunnels): each
// reload is applied, and every tunnel still echoes after them. With
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
	for _, s := range servers(bin, up.URL) {
		isSluice := strings.HasPrefix(s.name, "sluice")
		if !isSluice && os.Getenv("CI") == "" {
			if _, err := s.version(); err != nil {
				continue
			}
		}
		t.Run(s.name, func(t *testing.T) {
			r := measure(s, 5, 2)
			if r.opened != 5 || !r.newOK {
				t.Fatalf("%+v: want 5 tunnels and every reload applied", r)
			}
			if isSluice && r.alive != 5 {
				t.Errorf("%d of 5 tunnels echo after the reloads", r.alive)
			}
			t.Logf("%d of %d echo; processes %d → %d", r.alive, r.opened, r.procs[0], r.procs[1])
		})
	}
}
