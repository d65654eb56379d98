package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata/*.golden, testdata/bad/*.golden, docs/config.md's reference)")

// testEnv is the environment the golden configs are read with.
var testEnv = map[string]string{"DOMAIN": "example.com", "SITE": "Sluice"}

func testLoader() *Loader {
	return &Loader{LookupEnv: func(name string) (string, bool) {
		v, ok := testEnv[name]
		return v, ok
	}}
}

// goldenName is the golden file of a config file: its name with the
// extension replaced by .golden.
func goldenName(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".golden"
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

func configFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no config files in %s", dir)
	}
	return out
}

// TestExplainGolden: each valid config's description (sluice check
// --explain) matches testdata/NAME.golden, and its graph
// testdata/NAME.dot.
func TestExplainGolden(t *testing.T) {
	for _, file := range configFiles(t, "testdata") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := testLoader().Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			defer cfg.Close()
			var explain, graph bytes.Buffer
			if err := cfg.Explain(&explain); err != nil {
				t.Fatal(err)
			}
			if err := cfg.Graph(&graph); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, goldenName(file), explain.Bytes())
			checkGolden(t, strings.TrimSuffix(file, filepath.Ext(file))+".dot", graph.Bytes())
		})
	}
}

// TestErrorsGolden: each bad config gives exactly the error lines of
// testdata/bad/NAME.golden, all of them at once.
func TestErrorsGolden(t *testing.T) {
	for _, file := range configFiles(t, filepath.Join("testdata", "bad")) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := testLoader().Load(file)
			if err == nil {
				cfg.Close()
				t.Fatalf("Load succeeded; want errors")
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load: %v, want Errors", err)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Error(), file+":") || e.Line < 1 || e.Col < 1 {
					t.Errorf("error without a position in %s: %q", file, e)
				}
			}
			// Some constructors report absolute paths: make them relative.
			wd, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			out := strings.ReplaceAll(errs.Error()+"\n", wd+string(filepath.Separator), "")
			checkGolden(t, goldenName(file), []byte(out))
		})
	}
}
