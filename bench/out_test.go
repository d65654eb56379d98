package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/report"
)

// committedReport writes a results.json into a checkout-like directory
// and returns its path.
func committedReport(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "docs", "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := report.Report{Command: "sluicebench --scenarios idle", Started: time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC), Rounds: 1}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDefaultOutIsScratch: without --out the report goes to the scratch
// directory, outside the checkout, and --help and the run say where.
func TestDefaultOutIsScratch(t *testing.T) {
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	want := filepath.Join(scratch, "sluice-bench")
	o, code := parse(nil, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if o.out != want || !o.outDefault {
		t.Errorf("out = %q (default %v), want %q (default)", o.out, o.outDefault, want)
	}
	o, _ = parse([]string{"--out", "../docs/benchmarks"}, io.Discard)
	if o.out != "../docs/benchmarks" || o.outDefault {
		t.Errorf("--out ../docs/benchmarks: out = %q (default %v)", o.out, o.outDefault)
	}
	var help bytes.Buffer
	if _, code := parse([]string{"--help"}, &help); code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	if !strings.Contains(help.String(), want) {
		t.Errorf("--help does not name the scratch directory %s:\n%s", want, help.String())
	}
}

// TestFromDoesNotOverwriteCommittedReport: rewriting a report from a
// committed results.json writes to the scratch directory unless --out
// names the committed one.
func TestFromDoesNotOverwriteCommittedReport(t *testing.T) {
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	from := committedReport(t)
	committed := filepath.Dir(from)

	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--from", from}, &stdout, &stderr); code != exitOK {
		t.Fatalf("Main --from: exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(committed, "README.md")); err == nil {
		t.Errorf("--from without --out wrote README.md beside the committed results.json")
	}
	want := filepath.Join(scratch, "sluice-bench", "README.md")
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Errorf("report at %q, want %q", got, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Errorf("no report in the scratch directory: %v", err)
	}
	if !strings.Contains(stderr.String(), filepath.Join(scratch, "sluice-bench")) {
		t.Errorf("stderr does not say where the report goes: %q", stderr.String())
	}

	stdout.Reset()
	if code := Main([]string{"--from", from, "--out", committed}, &stdout, io.Discard); code != exitOK {
		t.Fatalf("Main --from --out: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(committed, "README.md")); err != nil {
		t.Errorf("--out %s did not write the report there: %v", committed, err)
	}
}
