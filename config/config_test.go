package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"512", 512, false},
		{"512B", 512, false},
		{"16KiB", 16 << 10, false},
		{"16kib", 16 << 10, false},
		{"1.5 MiB", 3 << 19, false},
		{"10MB", 10e6, false},
		{"2GiB", 2 << 30, false},
		{"1TB", 1e12, false},
		{"-1", -1, false},
		{"", 0, true},
		{"KiB", 0, true},
		{"16KB2", 0, true},
		{"16 parsecs", 0, true},
		{"1.5", 0, true},
		{"99999999TiB", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for n, want := range map[int64]string{0: "0", 1000: "1000", 1024: "1KiB", 16 << 10: "16KiB", 3 << 19: "1536KiB", 1 << 30: "1GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"0", 0, false},
		{"10s", 10 * time.Second, false},
		{"1m30s", 90 * time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"30", 0, true},
		{"1.5", 0, true},
		{"soon", 0, true},
	} {
		got, err := ParseDuration(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for d, want := range map[time.Duration]string{10 * time.Second: "10s", time.Minute: "1m", 90 * time.Second: "1m30s", 2 * time.Hour: "2h", 250 * time.Millisecond: "250ms"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"HOST": "example.com", "EMPTY": "", "PORT": "8080"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${HOST}", "example.com", ""},
		{"http://${HOST}:${PORT}/", "http://example.com:8080/", ""},
		{"${MISSING:-fallback}", "fallback", ""},
		{"${EMPTY:-fallback}", "fallback", ""},
		{"${EMPTY}", "", ""},
		{"${MISSING:-}", "", ""},
		{"$${HOST}", "${HOST}", ""},
		{"$path$query", "$path$query", ""},
		{"cost: $5", "cost: $5", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"${HOST", "", "unterminated"},
		{"${1X}", "", "bad environment variable reference"},
		{"${}", "", "bad environment variable reference"},
	} {
		got, err := expand(tc.in, lookup)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("expand(%q) error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// parseString parses a config given as text, as if read from dir/test.yaml.
func parseString(t *testing.T, dir, text string) (*Config, error) {
	t.Helper()
	cfg, err := testLoader().Parse(filepath.Join(dir, "test.yaml"), []byte(text))
	if cfg != nil {
		t.Cleanup(func() { cfg.Close() })
	}
	return cfg, err
}

func TestParseTopLevel(t *testing.T) {
	const routes = "\nroutes: [{match: /, pipeline: [echo]}]\n"
	for _, tc := range []struct {
		text  string
		check func(c *Config) bool
	}{
		{"", func(c *Config) bool {
			return len(c.Listen) == 1 && c.Listen[0].Addr == ":8080" && c.Workers == 0 && c.Health == (Health{}) && c.ServerHeader == "sluice" && c.Log.Format == "text"
		}},
		{"listen: [127.0.0.1:1, unix:s.sock]", func(c *Config) bool {
			return c.Listen[0] == Address{"tcp", "127.0.0.1:1"} && c.Listen[1] == Address{"unix", filepath.Join("dir", "s.sock")}
		}},
		{"workers: auto", func(c *Config) bool { return c.Workers == WorkersAuto }},
		{"workers: 4", func(c *Config) bool { return c.Workers == 4 }},
		{"workers: 0", func(c *Config) bool { return c.Workers == 0 }},
		{"workers: 2\nhealth: {interval: 200ms, timeout: 3s}", func(c *Config) bool {
			return c.Health == Health{200 * time.Millisecond, 3 * time.Second} &&
				c.Health.WithDefaults() == c.Health && (Health{}).WithDefaults() == Health{DefaultHealthInterval, DefaultHealthTimeout}
		}},
		{"workers: 2\ndrain_timeout: 6h\ndrain_max_memory: 2GiB", func(c *Config) bool {
			return c.DrainTimeout == 6*time.Hour && c.DrainMaxMemory == 2<<30
		}},
		{"server_header: false", func(c *Config) bool { return c.ServerHeader == "" }},
		{`server_header: "false"`, func(c *Config) bool { return c.ServerHeader == "false" }},
		{"server_header: edge/1", func(c *Config) bool { return c.ServerHeader == "edge/1" }},
		{"server_header: ''", func(c *Config) bool { return c.ServerHeader == "" }},
		{"pid_file: run/s.pid", func(c *Config) bool { return c.PidFile == filepath.Join("dir", "run", "s.pid") }},
		{"limits: {max_body: unlimited, min_body_rate: off, idle_timeout: 1m, max_target: 4KiB}", func(c *Config) bool {
			l := c.Limits
			return l.MaxBodyBytes == -1 && l.MinBodyRate == -1 && l.IdleTimeout == time.Minute && l.MaxTargetBytes == 4096
		}},
		{"log: {level: warn, format: json, output: stdout}", func(c *Config) bool {
			return c.Log.Level.String() == "WARN" && c.Log.Format == "json" && c.Log.Output == "stdout"
		}},
	} {
		cfg, err := parseString(t, "dir", tc.text+routes)
		if err != nil {
			t.Errorf("%q: %v", tc.text, err)
			continue
		}
		if !tc.check(cfg) {
			t.Errorf("%q: got %+v", tc.text, cfg)
		}
	}
}

// Every error is reported, in file order, with its position.
func TestParseCollectsAllErrors(t *testing.T) {
	_, err := parseString(t, ".", `
lisen: :80
workers: none
drain_max_memory: 1KB
routes:
  - match: /a
    pipeline: [compres]
  - match: /b
    pipeline: [{text: {bdy: x}}]
`)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v, want Errors", err)
	}
	want := []string{
		`test.yaml:2:1: unknown top-level key "lisen" (did you mean "listen"?)`,
		`test.yaml:3:10: workers: want a number of processes (0 for none) or "auto", got "none"`,
		`test.yaml:4:19: drain_max_memory: want a size of at least 1MB (e.g. 2GB), got "1KB"`,
		`test.yaml:7:16: unknown component "compres" (did you mean "compress"?)`,
		`test.yaml:9:24: unknown text option "bdy" (did you mean "body"?)`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs)
	}
	for i, e := range errs {
		if e.Error() != want[i] {
			t.Errorf("error %d = %q\nwant      %q", i, e, want[i])
		}
	}
}

// Relative paths are resolved against the config file's directory.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "site", "index.html"), []byte("<p>x</p>"), 0o644)
	cfg, err := parseString(t, dir, "routes: [{match: /, pipeline: [{template: ./site/index.html}]}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Routes[0].Stages[0].Options[0]; got != (Option{"root", "./site/index.html"}) {
		t.Errorf("options as written = %v", got)
	}
	// The same file from another directory does not resolve.
	if _, err := parseString(t, t.TempDir(), "routes: [{match: /, pipeline: [{template: ./site/index.html}]}]\n"); err == nil {
		t.Error("a path relative to another directory resolved")
	}
}

func TestExtraMethods(t *testing.T) {
	cfg, err := parseString(t, ".", `
routes:
  - {match: /a, methods: [GET, PROPFIND], pipeline: [echo]}
  - {match: /b, methods: [PROPFIND, MKCOL], pipeline: [echo]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.ExtraMethods(), ","); got != "PROPFIND,MKCOL" {
		t.Errorf("ExtraMethods = %s", got)
	}
}

func TestSuggest(t *testing.T) {
	names := components.Names()
	for in, want := range map[string]string{
		"txt":        ` (did you mean "text"?)`,
		"basicauth":  ` (did you mean "basic_auth"?)`,
		"Compress":   ` (did you mean "compress"?)`,
		"frobnicate": " (want one of: " + strings.Join(names, ", ") + ")",
	} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// Format keeps comments, blank lines between entries and value styles,
// is idempotent, and does not change what the file means.
func TestFormat(t *testing.T) {
	in := `# Site config
listen:   127.0.0.1:8080     # where
routes:
    # the scripts
    - match: [/js/, /css/]
      pipeline:
      - text: "hi\n"
      - compress: [gzip]


    - match: /
      pipeline:
          - headers: {set: {X-A: b}}
          # a block
          - text: |
              line one
              line two
`
	want := `# Site config
listen: 127.0.0.1:8080 # where
routes:
  # the scripts
  - match: [/js/, /css/]
    pipeline:
      - text: "hi\n"
      - compress: [gzip]

  - match: /
    pipeline:
      - headers: {set: {X-A: b}}
      # a block
      - text: |
          line one
          line two
`
	out, err := Format("in.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("Format:\n%s\nwant:\n%s", out, want)
	}
	again, err := Format("in.yaml", out)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("Format is not idempotent:\n%s", again)
	}
	var before, after bytes.Buffer
	c1, err := parseString(t, ".", in)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := parseString(t, ".", string(out))
	if err != nil {
		t.Fatal(err)
	}
	c1.Explain(&before)
	c2.Explain(&after)
	if before.String() != after.String() {
		t.Errorf("Format changed the meaning:\n%s\nvs\n%s", before.String(), after.String())
	}
	if _, err := Format("bad.yaml", []byte("a:\n\t- b\n")); err == nil || !strings.HasPrefix(err.Error(), "bad.yaml:2:1: YAML syntax") {
		t.Errorf("Format of a syntax error: %v", err)
	}
}

// The golden configs are in canonical form already.
func TestGoldenConfigsFormatted(t *testing.T) {
	for _, file := range configFiles(t, "testdata") {
		if filepath.Ext(file) == ".json" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Format(file, data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, data) {
			t.Errorf("%s is not formatted:\n%s", file, out)
		}
	}
}
