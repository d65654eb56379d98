package config

import (
	"strings"
	"testing"
)

// Overrides replace what a loaded file says, leave alone what they do
// not name, and name the flag in their errors.
func TestOverridesApply(t *testing.T) {
	file := []byte("listen: 127.0.0.1:8080\nworkers: 2\npid_file: /run/a.pid\nhealth: {interval: 1s, timeout: 2s}\nroutes:\n  - match: /\n    pipeline: [echo]\n")
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		o       Overrides
		listen  string
		workers int
		pid     string
		err     string
	}{
		{name: "none", listen: "127.0.0.1:8080", workers: 2, pid: "/run/a.pid"},
		{name: "listen", o: Overrides{Listen: str("127.0.0.1:9090")}, listen: "127.0.0.1:9090", workers: 2, pid: "/run/a.pid"},
		{name: "workers", o: Overrides{Workers: str("0")}, listen: "127.0.0.1:8080", workers: 0, pid: "/run/a.pid"},
		{name: "pid file off", o: Overrides{PidFile: str("")}, listen: "127.0.0.1:8080", workers: 2, pid: ""},
		{name: "bad listen", o: Overrides{Listen: str("127.0.0.1:99999")}, err: "--listen: "},
		{name: "bad workers", o: Overrides{Workers: str("many")}, err: "--workers: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := new(Loader).Parse("sluice.yaml", file)
			if err != nil {
				t.Fatal(err)
			}
			err = tt.o.Apply(cfg)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("Apply = %v, want an error starting %q", err, tt.err)
				}
				return
			}
			defer cfg.Close()
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if len(cfg.Listen) != 1 || cfg.Listen[0].Addr != tt.listen || cfg.Workers != tt.workers || cfg.PidFile != tt.pid {
				t.Errorf("listen %v, workers %d, pid file %q; want %s, %d, %q", cfg.Listen, cfg.Workers, cfg.PidFile, tt.listen, tt.workers, tt.pid)
			}
		})
	}
}

// A workers override that starts workers drops the file's warning that
// its health checks have no workers to check; one that keeps none keeps it.
func TestOverridesWorkersHealthWarning(t *testing.T) {
	file := []byte("listen: 127.0.0.1:8080\nhealth: {interval: 1s, timeout: 2s}\nroutes:\n  - match: /\n    pipeline: [echo]\n")
	for _, tt := range []struct {
		workers string
		warned  bool
	}{{"2", false}, {"0", true}} {
		cfg, err := new(Loader).Parse("sluice.yaml", file)
		if err != nil {
			t.Fatal(err)
		}
		if !hasWarning(cfg, HealthWarning) {
			t.Fatalf("the file alone: no %q warning in %v", HealthWarning, cfg.Warnings)
		}
		w := tt.workers
		if err := (Overrides{Workers: &w}).Apply(cfg); err != nil {
			t.Fatal(err)
		}
		if got := hasWarning(cfg, HealthWarning); got != tt.warned {
			t.Errorf("--workers %s: warned %v, want %v", tt.workers, got, tt.warned)
		}
		cfg.Close()
	}
}

func hasWarning(cfg *Config, msg string) bool {
	for _, w := range cfg.Warnings {
		if w.Msg == msg {
			return true
		}
	}
	return false
}
