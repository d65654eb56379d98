package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The benchmark harness is a module of its own (bench/): sluice neither
// runs it nor links its plotting, font, LaTeX and PDF packages.

func TestBenchPointsToHarness(t *testing.T) {
	r := sluice(t, "bench", "--quick")
	if r.code != 2 || !strings.Contains(r.stderr, "go -C bench run ./cmd/sluicebench") || r.stdout != "" {
		t.Errorf("sluice bench = %d, stdout %q, stderr %q; want 2 and how to run the harness", r.code, r.stdout, r.stderr)
	}
}

func TestNoHarnessDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if strings.Contains(pkg, "/sluice/bench") || strings.Contains(pkg, "gonum.org/") ||
			strings.Contains(pkg, "/go-fonts/") || strings.Contains(pkg, "/go-latex/") || strings.Contains(pkg, "/go-pdf/") {
			t.Errorf("sluice depends on %s", pkg)
		}
	}
}
