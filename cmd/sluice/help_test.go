package main_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
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
