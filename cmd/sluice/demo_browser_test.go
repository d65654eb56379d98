package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// screenshotsDir is where -update writes the demo's screenshots.
var screenshotsDir = filepath.Join("..", "..", "docs", "demo", "screenshots")

// TestDemoInBrowser starts `sluice demo` and visits its site in headless
// Chromium from the home page, following every same-origin link: each
// page answers 2xx (or the status its link's data-expect-status names),
// logs no console error or warning, throws nothing, loads every
// subresource (compressed ones decoded), applies its stylesheets and
// decodes its images. A page behind basic authentication is visited
// with the credentials the demo prints at start. Each page's full-page
// screenshot goes to a temporary folder, or with -update to
// docs/demo/screenshots.
func TestDemoInBrowser(t *testing.T) {
	browser := newBrowser(t)
	args := []string{"demo", "--listen", "127.0.0.1:0"}
	// The demo with a database takes the folder for it.
	help := sluice(t, "help", "demo")
	rebuilt := strings.Contains(help.stdout, "-data")
	if rebuilt {
		args = append(args, "--data", t.TempDir())
	}
	var stdout sluicetest.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout = &stdout
	s := startCmd(t, cmd)

	shots := t.TempDir()
	if *update {
		shots = screenshotsDir
		old, _ := filepath.Glob(filepath.Join(shots, "*.*g"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &crawl{
		browser:  browser,
		maxPages: 80,
		perShape: 3,
		credentials: func() (credentials, bool) {
			return parseCredentials(stdout.String() + "\n" + s.stderr())
		},
		screenshots: shots,
		// The rebuilt demo has an icon; the old one has none.
		favicon: rebuilt,
	}
	results := c.run(t, "http://"+s.addr+"/")
	var encoded []string
	for _, r := range results {
		switch {
		case r.download:
			t.Logf("%s: %d, downloaded", r.url, r.status)
		default:
			t.Logf("%s: %d%s, screenshot %s", r.url, r.status, map[bool]string{true: " (logged in)"}[r.authed], filepath.Base(r.shot))
		}
		for _, p := range r.problems {
			t.Errorf("%s: %s", r.url, p)
		}
		encoded = append(encoded, r.encoded...)
	}
	if len(results) < 2 {
		t.Errorf("visited %d pages; the home page links no page of the demo", len(results))
	}
	slices.Sort(encoded)
	t.Logf("decoded from a Content-Encoding: %q", slices.Compact(encoded))
	// The rebuilt demo serves /assets/ compressed; the old one serves
	// its four files as they are.
	if rebuilt && len(encoded) == 0 {
		t.Errorf("no page loaded a compressed asset")
	}
	if code := s.stop(t, os.Interrupt); code != 0 {
		t.Errorf("exit status after SIGINT = %d, want 0\n%s", code, s.stderr())
	}
}

// parseCredentials finds the demo's basic-authentication credentials in
// its start output: a line naming a user and a password, as
// `user=NAME password=PASS` (a log line; quotes and ":" also do),
// `user NAME, password PASS`, or `NAME:PASS` after the word
// "credentials" or "login".
func parseCredentials(output string) (credentials, bool) {
	for line := range strings.Lines(output) {
		u := userField.FindStringSubmatch(line)
		p := passwordField.FindStringSubmatch(line)
		if u != nil && p != nil {
			return credentials{u[1] + u[2], p[1]}, true
		}
		if m := userColonPassword.FindStringSubmatch(line); m != nil {
			return credentials{m[1], m[2]}, true
		}
	}
	return credentials{}, false
}

var (
	// user=NAME, user: NAME, "user":"NAME", or "user NAME," (a comma
	// ends a name given after a space: "the user and password" is none).
	userField     = regexp.MustCompile(`(?i)\buser(?:name)?(?:"?\s*[=:]\s*"?([^\s",;]+)|\s+([^\s",;]+)[,;])`)
	passwordField = regexp.MustCompile(`(?i)\bpass(?:word)?(?:"?\s*[=:]\s*"?|\s+)([^\s",;]+)`)
	// NAME:PASS after "credentials" or "login".
	userColonPassword = regexp.MustCompile(`(?i)\b(?:credentials|login)\b[^\s]*\s*[=:]?\s*"?([^\s:"]+):([^\s"]+?)"?\s*$`)
)

func TestParseCredentials(t *testing.T) {
	for out, want := range map[string]credentials{
		"time=x level=INFO msg=\"demo credentials\" user=demo password=s3cret\n":               {"demo", "s3cret"},
		"msg=listening addr=127.0.0.1:1\nlevel=INFO msg=private user=\"ada\" password=\"x y\"": {"ada", "x"},
		"/private/: log in with username: guest, password: hunter2\n":                          {"guest", "hunter2"},
		"  private:  user demo, password Zx9-q\n":                                              {"demo", "Zx9-q"},
		"Demo login: demo:pa55\n":              {"demo", "pa55"},
		"credentials demo:pa55\n":              {"demo", "pa55"},
		`{"msg":"demo","user":"u","pass":"p"}`: {"u", "p"},
	} {
		if got, ok := parseCredentials(out); !ok || got != want {
			t.Errorf("parseCredentials(%q) = %v, %v; want %v", out, got, ok, want)
		}
	}
	for _, out := range []string{
		"msg=listening addr=127.0.0.1:8080\n", "user=demo\npassword=x\n", "",
		"it prints the user and password of the private area\n",
	} {
		if got, ok := parseCredentials(out); ok {
			t.Errorf("parseCredentials(%q) = %v, want none", out, got)
		}
	}
}
