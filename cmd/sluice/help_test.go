package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// flagToken finds what reads as a flag in help text: -x or --name after
// a space, a bracket, a bar, a quote or the start of a line.
var flagToken = regexp.MustCompile(`(?m)(?:^|[\s\[(|'"])--?([a-z](?:[a-z0-9.-]*[a-z0-9])?)\b`)

// otherCommand finds a quoted command line in help text, whose flags are
// another command's: 'sluice serve -c FILE'.
var otherCommand = regexp.MustCompile(`'sluice [a-z]+[^']*'`)

// commandNames are the commands 'sluice help' lists.
func commandNames(t *testing.T) []string {
	t.Helper()
	r := sluice(t, "help")
	_, list, ok := strings.Cut(r.stdout, "Commands:\n")
	if r.code != 0 || !ok {
		t.Fatalf("sluice help = %d:\n%s", r.code, r.stdout)
	}
	var names []string
	for _, l := range strings.Split(list, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		names = append(names, strings.Fields(l)[0])
	}
	if len(names) < 5 {
		t.Fatalf("sluice help lists %q", names)
	}
	return names
}

// commandHelp splits a command's --help into its text (usage lines and
// description) and the flags it defines, the flag set's own listing:
// each flag's name mapped to its description.
func commandHelp(t *testing.T, name string) (text string, flags map[string]string) {
	t.Helper()
	r := sluice(t, name, "--help")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("sluice %s --help = %d, stderr %q", name, r.code, r.stderr)
	}
	h := sluice(t, "help", name)
	if h.code != 0 || h.stdout != r.stdout {
		t.Errorf("sluice help %s differs from sluice %s --help:\n%s", name, name, h.stdout)
	}
	flags = map[string]string{}
	lines := strings.Split(r.stdout, "\n")
	var textLines []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "  -") {
			if len(flags) == 0 {
				textLines = append(textLines, l)
			}
			continue
		}
		flag := strings.TrimPrefix(strings.Fields(l)[0], "-")
		var desc []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    \t") {
			i++
			desc = append(desc, strings.TrimSpace(lines[i]))
		}
		flags[flag] = strings.Join(desc, " ")
	}
	return strings.Join(textLines, "\n"), flags
}

// Each command's --help names only flags the command has, and its usage
// lines name every flag it has (a flag "same as" another excepted);
// 'sluice help' and 'sluice help signals' name only flags some command
// has.
func TestHelpNamesOnlyFlagsThatExist(t *testing.T) {
	all := map[string]bool{"help": true, "h": true, "version": true}
	for _, name := range commandNames(t) {
		if name == "help" {
			continue // its flags are the commands'; checked below
		}
		text, flags := commandHelp(t, name)
		text = otherCommand.ReplaceAllString(text, "")
		usageLines, _, _ := strings.Cut(text, "\n\n")
		for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
			if _, ok := flags[m[1]]; !ok && m[1] != "help" {
				t.Errorf("sluice %s --help names %s, which it does not have:\n%s", name, strings.TrimSpace(m[0]), text)
			}
		}
		named := map[string]bool{}
		for _, m := range flagToken.FindAllStringSubmatch(usageLines, -1) {
			named[m[1]] = true
		}
		for flag, desc := range flags {
			all[flag] = true
			if !named[flag] && !strings.HasPrefix(desc, "same as ") {
				t.Errorf("sluice %s --help: the usage lines do not name -%s:\n%s", name, flag, usageLines)
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "--help"}, {"help", "help"}, {"help", "signals"}} {
		r := sluice(t, args...)
		if r.code != 0 || r.stdout == "" {
			t.Errorf("sluice %s = %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		for _, m := range flagToken.FindAllStringSubmatch(r.stdout, -1) {
			if !all[m[1]] {
				t.Errorf("sluice %s names %s, which no command has", strings.Join(args, " "), strings.TrimSpace(m[0]))
			}
		}
	}
	if !slices.Contains(commandNames(t), "serve") {
		t.Error("sluice help does not list serve")
	}
}

// Each warning 'sluice check --help' promises, check gives: the help's
// list of what serve would warn about has one entry per case below, and
// check prints a warning for each case's file at the key it names.
func TestCheckHelpWarnings(t *testing.T) {
	text, _ := commandHelp(t, "check")
	text = strings.Join(strings.Fields(text), " ")
	_, list, ok := strings.Cut(text, "What serve would warn about (")
	list, _, ok2 := strings.Cut(list, ")")
	if !ok || !ok2 {
		t.Fatalf("sluice check --help lists no warnings:\n%s", text)
	}
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	old, oldKey := ca.IssueFilesValid(t, dir, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour), "old.example")
	writeConfig(t, filepath.Join(dir, "users.htpasswd"), "alice:plaintext\n")
	if err := os.MkdirAll(filepath.Join(dir, "pub", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	const route = "routes:\n  - match: /\n    pipeline: [echo]\n"
	cases := map[string]struct{ config, want string }{
		"a health section with no workers to check": {"health: {interval: 1s}\n" + route, ":1:9: warning: health: "},
		"a database no route queries": {fmt.Sprintf("databases:\n  main: {driver: sqlite, dsn: %q}\n", filepath.Join(dir, "a.db")) + route,
			":2:3: warning: databases.main: "},
		"a TLS certificate that has expired or is not valid yet": {fmt.Sprintf("listen:\n  - address: 127.0.0.1:0\n    tls: {cert: %s, key: %s}\n", old, oldKey) + route,
			":3:17: warning: tls.cert: "},
		"an include pattern that matches no file": {"include: sites/*.yaml\n" + route, ":1:10: warning: include: "},
		"an exact match, such as /api, over a directory its files serve, where /api/ would serve the tree": {
			"routes:\n  - match: /api\n    pipeline: [files: ./pub]\n", `:2:12: warning: match "/api" is exact`},
		"a header condition on a field proxies set, such as X-Forwarded-For, which any client can send": {
			"routes:\n  - match: /\n    header: {X-Forwarded-For: \"*\"}\n    pipeline: [echo]\n  - match: /\n    pipeline: [echo]\n",
			`:3:14: warning: header X-Forwarded-For: any client`},
		"an htpasswd line whose hash cannot be verified": {"routes:\n  - match: /\n    pipeline:\n      - basic_auth: {realm: r, htpasswd: ./users.htpasswd}\n      - text: hi\n",
			":4:9: warning: basic_auth: "},
	}
	for _, item := range strings.Split(list, "; ") {
		c, ok := cases[item]
		if !ok {
			t.Errorf("sluice check --help promises a warning about %q: no case here shows check gives it", item)
			continue
		}
		delete(cases, item)
		file := filepath.Join(dir, "site.yaml")
		writeConfig(t, file, c.config)
		r := sluice(t, "check", "-c", file)
		if r.code != 0 || r.stdout != "ok\n" || !strings.HasPrefix(r.stderr, file+c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: sluice check = %d, stdout %q, stderr %q; want one warning %s...", item, r.code, r.stdout, r.stderr, c.want)
		}
	}
	for item := range cases {
		t.Errorf("sluice check warns about %s; its --help does not say so", item)
	}
}
