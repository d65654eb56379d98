package main_test

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/sluicetest"
)

// Every config block of the docs passes `sluice check`, so the docs
// cannot drift from the code. The convention, for doc writers
// (docs/config.md's introduction says it too):
//
//   - Every ```yaml and ```json block of README.md, docs/**/*.md and
//     examples/**/*.md is a config file or a part of one. It is checked
//     by `sluice check` in an empty directory where the files and
//     directories it names are made (paths under /etc, /var... are made
//     there too): see stub.
//   - A part is completed by its shape. A mapping with `routes` is a
//     whole file. A mapping whose first key is `match` is one route; one
//     whose first key is `pipeline` is one route too, and gets `match: /`.
//     Any other mapping is settings: a route is added. A list whose first entry has `match` is a routes list. Any
//     other list is pipeline entries, put in a route, with a `text`
//     source added if they have none.
//   - A whole file passes without warnings; a part may warn (completing
//     it may be why, as a database no added route queries).
//   - ```yaml not-a-config marks a block that is not meant to pass (one
//     that shows an error on purpose): it is not checked.
//   - ${NAME} takes its value from docEnv.
//
// A failure names the doc file and the line in it of each problem.

// docEnv is the environment the docs' configs are checked in.
var docEnv = []string{"PORT=8080", "INSTANCE=a", "ORIGIN=http://127.0.0.1:9000"}

// notAConfig is the info-string word that exempts a yaml block.
const notAConfig = "not-a-config"

// docFiles are the Markdown files whose config blocks are checked, as
// the repository names them.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, _ := filepath.Rel(filepath.Join("..", ".."), p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// codeBlock is a fenced code block of a Markdown file.
type codeBlock struct {
	file  string   // as the repository names it: docs/config.md
	line  int      // of its fence
	lang  string   // the info string's first word
	flags []string // its other words
	lines []string // with the fence's indentation removed
	src   string   // for a config file of examples/: its directory, copied for the check
}

var fence = regexp.MustCompile("^( *)(```+|~~~+)\\s*(.*)$")

// codeBlocks returns the fenced code blocks of the Markdown file name.
func codeBlocks(t *testing.T, name string) []codeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseCodeBlocks(name, string(data))
	if err != nil {
		t.Error(err)
	}
	return blocks
}

// parseCodeBlocks returns the fenced code blocks of the Markdown text of
// the file name.
func parseCodeBlocks(name, text string) ([]codeBlock, error) {
	var (
		blocks []codeBlock
		cur    *codeBlock
		indent int
		marker string
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		if cur == nil {
			if m != nil {
				words := strings.Fields(m[3])
				cur = &codeBlock{file: name, line: n}
				if len(words) > 0 {
					cur.lang, cur.flags = words[0], words[1:]
				}
				indent, marker = len(m[1]), m[2]
			}
			continue
		}
		if m != nil && strings.HasPrefix(m[2], marker) && m[3] == "" {
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		// Less the fence's indentation, as far as the line has it.
		i := 0
		for i < indent && i < len(line) && line[i] == ' ' {
			i++
		}
		cur.lines = append(cur.lines, line[i:])
	}
	if cur != nil {
		return blocks, fmt.Errorf("%s:%d: the code block is not closed", name, cur.line)
	}
	return blocks, nil
}

// configFile is a config block made a whole file.
type configFile struct {
	shape  string
	lines  []string
	from   []int // for each line, the block's line it is (1-based), or 0 if added
	indent int   // columns added before each of the block's lines
	edits  map[int][]edit
}

// edit is text inserted by stub in a line of the file: delta bytes
// before column col (1-based).
type edit struct{ col, delta int }

// docPosition maps a position in the completed file c back to the
// block b's in its doc.
func (c *configFile) docPosition(b codeBlock, line, col int) (int, int) {
	if line < 1 || line > len(c.from) || c.from[line-1] == 0 {
		return b.line, 1 // in what completing added: the fence
	}
	edits := c.edits[line]
	for i := len(edits) - 1; i >= 0; i-- { // each in the columns of those before it
		if edits[i].col < col {
			col -= edits[i].delta
		}
	}
	return b.line + c.from[line-1], max(col-c.indent, 1)
}

func (c *configFile) add(line string) {
	c.lines = append(c.lines, line)
	c.from = append(c.from, 0)
}

// addBlock adds the block's lines from..to (1-based, inclusive).
func (c *configFile) addBlock(b codeBlock, from, to int) {
	pad := strings.Repeat(" ", c.indent)
	for i := from; i <= to; i++ {
		line := b.lines[i-1]
		if strings.TrimSpace(line) != "" {
			line = pad + line
		}
		c.lines = append(c.lines, line)
		c.from = append(c.from, i)
	}
}

func (c *configFile) text() string { return strings.Join(c.lines, "\n") + "\n" }

// complete makes the config block b a whole config file, by its shape.
func complete(b codeBlock) *configFile {
	n := len(b.lines)
	whole := &configFile{shape: "a whole file"}
	whole.addBlock(b, 1, n)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(whole.text()), &doc); err != nil || len(doc.Content) == 0 {
		return whole // sluice check says what is wrong
	}
	root := doc.Content[0]
	switch {
	case root.Kind == yaml.MappingNode && len(root.Content) > 0:
		for i := 0; i < len(root.Content); i += 2 {
			if root.Content[i].Value == "routes" {
				return whole
			}
		}
		switch first := root.Content[0]; first.Value {
		case "match": // a route: the list item's dash goes before its first key
			c := &configFile{shape: "a route", indent: 4}
			c.add("routes:")
			c.addBlock(b, 1, n)
			c.lines[first.Line] = "  - " + c.lines[first.Line][4:]
			return c
		case "pipeline":
			c := &configFile{shape: "a route", indent: 4}
			c.add("routes:")
			c.add("  - match: /")
			c.addBlock(b, 1, n)
			return c
		}
		c := &configFile{shape: "settings"}
		c.addBlock(b, 1, n)
		c.add("routes:")
		c.add("  - match: /")
		c.add(`    pipeline: [{text: "ok\n"}]`)
		return c
	case root.Kind == yaml.SequenceNode && len(root.Content) > 0:
		if first := root.Content[0]; first.Kind == yaml.MappingNode && len(first.Content) > 0 && first.Content[0].Value == "match" {
			c := &configFile{shape: "a routes list", indent: 2}
			c.add("routes:")
			c.addBlock(b, 1, n)
			return c
		}
		c := &configFile{shape: "pipeline entries", indent: 6}
		c.add("routes:")
		c.add("  - match: /")
		c.add("    pipeline:")
		// Without a source, one goes after the pipes, before the filters.
		at, hasSource := n+1, false
		for _, e := range root.Content {
			name := e.Value
			if e.Kind == yaml.MappingNode && len(e.Content) > 0 {
				name = e.Content[0].Value
			}
			r, ok := components.Lookup(name)
			switch {
			case !ok:
			case r.Kind == components.KindSource || r.Answers:
				hasSource = true
			case r.Kind == components.KindFilter:
				at = min(at, e.Line)
			}
		}
		if hasSource {
			c.addBlock(b, 1, n)
			return c
		}
		c.addBlock(b, 1, at-1)
		c.add(`      - text: "ok\n"`)
		c.addBlock(b, at, n)
		return c
	}
	return whole
}

// docFixtures are the contents stub writes.
type docFixtures struct {
	cert, key, htpasswd []byte
}

func newDocFixtures(t *testing.T) *docFixtures {
	ca := sluicetest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := ca.IssueFiles(t, dir, "example.com")
	var f docFixtures
	var err error
	if f.cert, err = os.ReadFile(certFile); err != nil {
		t.Fatal(err)
	}
	if f.key, err = os.ReadFile(keyFile); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("wonderland"), 5)
	if err != nil {
		t.Fatal(err)
	}
	f.htpasswd = []byte("alice:" + string(hash) + "\n")
	return &f
}

// Path options, by the key their value is under: the value is a file
// to make (with the content of what it is), a directory to make, or a
// file the server makes, whose directory is made.
const (
	isDir = iota
	isFile
	isMade
	isEither // a file if its name has an extension, else a directory
)

// pathKind reports whether a value under key is a path, and of what.
// Beyond pathKeys, every option a component lists in its Paths is one.
func pathKind(key string) (int, bool) {
	if what, ok := pathKeys[key]; ok {
		return what, true
	}
	for _, r := range components.All() {
		for _, p := range r.Paths {
			if p == key || strings.HasSuffix(p, "."+key) || key == r.Name && p == r.Scalar {
				return isEither, true
			}
		}
	}
	return 0, false
}

var pathKeys = map[string]int{
	// directories
	"root": isDir, "dir": isDir, "files": isDir, "htaccess": isDir, "template": isDir,
	"data": isDir, "sendfile": isDir, "locations": isDir,
	// files
	"cert": isFile, "key": isFile, "ca_roots": isFile, "htpasswd": isFile, "file": isFile,
	"script": isFile, "cgi": isFile, "password_file": isFile, "error_pages": isFile,
	// an included file, made empty; a pattern's is made under the
	// pattern's own name (sites/*.yaml), which the pattern matches
	"include": isFile,
	// made by the server
	"log": isMade, "output": isMade, "access_log": isMade, "pid_file": isMade, "dsn": isMade,
	"socket": isMade, "state": isMade,
}

// stub makes in dir the files and directories that the config c names,
// moving absolute paths into dir: /var/www/site becomes DIR/var/www/site
// (c.edits keeps the columns this moves).
func stub(t *testing.T, c *configFile, dir string, fx *docFixtures) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(c.text()), &doc); err != nil {
		return // sluice check says what is wrong
	}
	var walk func(n *yaml.Node, key, parent string)
	walk = func(n *yaml.Node, key, parent string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, e := range n.Content {
				walk(e, key, parent)
			}
		case yaml.SequenceNode:
			for _, e := range n.Content {
				walk(e, key, parent)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], n.Content[i].Value, key)
			}
		case yaml.ScalarNode:
			what, ok := pathKind(key)
			if parent == "error_pages" || parent == "locations" {
				what, ok = pathKeys[parent], true // the values of a map of paths
			}
			if !ok || !looksLikePath(n.Value) && key != "include" {
				return
			}
			name := n.Value
			if path.IsAbs(name) {
				// Into dir: the column of what follows on the line moves.
				line := c.lines[n.Line-1]
				i := n.Column - 1
				for _, e := range c.edits[n.Line] {
					i += e.delta
				}
				if i < len(line) && (line[i] == '"' || line[i] == '\'') {
					i++
				}
				if i >= len(line) || line[i] != '/' {
					t.Errorf("cannot find %q at %d:%d of the completed file", name, n.Line, n.Column)
					return
				}
				c.lines[n.Line-1] = line[:i] + dir + line[i:]
				if c.edits == nil {
					c.edits = map[int][]edit{}
				}
				c.edits[n.Line] = append(c.edits[n.Line], edit{col: i + 1, delta: len(dir)})
				name = dir + name
			} else {
				name = filepath.Join(dir, filepath.FromSlash(name))
			}
			if rel, err := filepath.Rel(dir, name); err != nil || !filepath.IsLocal(rel) {
				return // not made outside dir: sluice check says it is missing
			}
			makePath(t, name, key, what, fx)
		}
	}
	walk(&doc, "", "")
}

// looksLikePath reports whether s may be a file's path: not a URL, an
// address, a variable or a pattern.
func looksLikePath(s string) bool {
	return s != "" && !strings.ContainsAny(s, ":$*?=@{}")
}

func makePath(t *testing.T, name, key string, what int, fx *docFixtures) {
	if what == isEither {
		what = isDir
		if path.Ext(name) != "" {
			what = isFile
		}
	}
	if what == isDir {
		if err := os.MkdirAll(name, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if what == isMade {
		return
	}
	if _, err := os.Stat(name); err == nil {
		return // named twice
	}
	data, mode := []byte("stub\n"), os.FileMode(0o644)
	switch {
	case key == "cert" || key == "ca_roots" || strings.HasSuffix(name, ".crt") || strings.HasSuffix(name, ".pem"):
		data = fx.cert
	case key == "key" || strings.HasSuffix(name, ".key"):
		data, mode = fx.key, 0o600
	case key == "htpasswd":
		data = fx.htpasswd
	case key == "script" || key == "cgi":
		data, mode = []byte("#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho ok\n"), 0o755
	case key == "password_file":
		data, mode = []byte("secret\n"), 0o600
	case key == "include":
		data = nil
	}
	if err := os.WriteFile(name, data, mode); err != nil {
		t.Fatal(err)
	}
}

func TestDocConfigs(t *testing.T) {
	fx := newDocFixtures(t)
	checked := map[string]int{}
	for _, name := range docFiles(t) {
		for _, b := range codeBlocks(t, name) {
			if b.lang != "yaml" && b.lang != "json" || slices.Contains(b.flags, notAConfig) {
				continue
			}
			checked[name]++
			t.Run(fmt.Sprintf("%s:%d", b.file, b.line), func(t *testing.T) {
				t.Parallel()
				if msg := checkDocConfig(t, b, fx); msg != "" {
					t.Error(msg)
				}
			})
		}
	}
	// The config files of examples/, with the files beside them.
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range examples {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), file)
		b := codeBlock{
			file:  filepath.ToSlash(rel),
			lang:  "yaml",
			lines: strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"),
			src:   filepath.Dir(file),
		}
		checked["examples"]++
		t.Run(b.file, func(t *testing.T) {
			t.Parallel()
			if msg := checkDocConfig(t, b, fx); msg != "" {
				t.Error(msg)
			}
		})
	}
	// Files known to hold configs: a change to how blocks are found
	// that finds none of theirs fails here.
	for _, name := range []string{"README.md", "docs/config.md", "docs/cookbook.md", "examples"} {
		if checked[name] == 0 {
			t.Errorf("no config block checked in %s", name)
		}
	}
}

// position is a FILE:LINE:COL at the start of a line of sluice check's
// output.
var position = regexp.MustCompile(`(?m)^(\S+?):(\d+):(\d+): `)

// checkDocConfig checks the config block b as the convention says. It
// returns what is wrong, positions in b's doc, or "" if nothing is.
func checkDocConfig(t *testing.T, b codeBlock, fx *docFixtures) string {
	c := complete(b)
	dir := t.TempDir()
	if b.src != "" {
		if err := os.CopyFS(dir, os.DirFS(b.src)); err != nil {
			t.Fatal(err)
		}
	}
	stub(t, c, dir, fx)
	file := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(file, []byte(c.text()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "check", "-c", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), docEnv...)
	out, err := cmd.CombinedOutput()
	warned := strings.Contains(string(out), ": warning: ")
	if err == nil && strings.HasSuffix(string(out), "ok\n") && (!warned || c.shape != "a whole file") {
		return ""
	}
	// Positions in the completed file, back to the doc's.
	msg := position.ReplaceAllStringFunc(string(out), func(s string) string {
		m := position.FindStringSubmatch(s)
		line, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		line, col = c.docPosition(b, line, col)
		return fmt.Sprintf("%s:%d:%d: ", b.file, line, col)
	})
	if b.src != "" {
		return fmt.Sprintf("%s: this config file fails sluice check:\n%s\nchecked as:\n%s", b.file, msg, c.text())
	}
	return fmt.Sprintf("%s:%d: this config block (%s) fails sluice check (or mark it ```yaml %s):\n%s\nchecked as:\n%s",
		b.file, b.line, c.shape, notAConfig, msg, c.text())
}

// The convention itself: parts are completed by their shape, paths are
// made, and a problem is reported at its line and column in the doc.
func TestDocConfigConvention(t *testing.T) {
	fx := newDocFixtures(t)
	doc := "# A doc\n\n" +
		"```yaml\n- compress\n```\n\n" + // 3: pipeline entries: a source is added before the filter
		"  ```yaml\n  - basic_auth: {realm: r, htpasswd: /etc/sluice/users.htpasswd}\n  ```\n\n" + // 7: in a list item
		"```yaml\nlisten: \":8080\"\nlimits: {max_body: 1MB}\n```\n\n" + // 11: settings
		"```yaml\npipeline:\n  - files: ./public\n```\n\n" + // 16: a route
		"```yaml\n- match: /a\n  pipeline: [echo]\n```\n\n" + // 21: a routes list
		"```yaml\nhealth: {interval: 1s}\n```\n\n" + // 26: settings that warn: a part may
		"```yaml\nhealth: {interval: 1s}\nroutes: [{match: /, pipeline: [echo]}]\n```\n\n" + // 30: a whole file may not
		"```yaml\n- compress\n- nope\n```\n\n" + // 35
		"```yaml\n- files: {root: /srv/www, bogus: 1}\n```\n\n" + // 40: the column after a moved path
		"```yaml not-a-config\n- nope\n```\n\n" + // 44
		"```yaml\n# a route, with a comment first\nmatch: /b\nmethods: [GET]\npipeline: [echo]\n```\n\n" + // 48
		"```yaml\nmatch: /c\npipeline: [nope]\n```\n" // 55
	blocks, err := parseCodeBlocks("x.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line int
		flag string
		want string // in the message; "" for none
	}{
		{3, "", ""},
		{7, "", ""},
		{11, "", ""},
		{16, "", ""},
		{21, "", ""},
		{26, "", ""},
		{30, "", "x.md:31:9: warning: "},
		{35, "", "x.md:37:3: "},
		{40, "", "x.md:41:27: unknown files option"},
		{44, notAConfig, ""},
		{48, "", ""},
		{55, "", "x.md:57:12: unknown component"},
	}
	if len(blocks) != len(tests) {
		t.Fatalf("found %d blocks, want %d", len(blocks), len(tests))
	}
	for i, tt := range tests {
		b := blocks[i]
		if b.line != tt.line || b.lang != "yaml" || tt.flag != "" && !slices.Contains(b.flags, tt.flag) {
			t.Errorf("block %d: line %d, lang %q, flags %q; want line %d, yaml, %q", i, b.line, b.lang, b.flags, tt.line, tt.flag)
			continue
		}
		if tt.flag != "" {
			continue
		}
		msg := checkDocConfig(t, b, fx)
		switch {
		case tt.want == "" && msg != "":
			t.Errorf("block at line %d fails:\n%s", tt.line, msg)
		case tt.want != "" && !strings.Contains(msg, tt.want):
			t.Errorf("block at line %d: message does not name %q:\n%s", tt.line, tt.want, msg)
		}
	}
}

// The cookbook's nginx and Caddy configs are checked by the programs
// themselves, where they are installed (under CI they must be): an
// nginx block by `nginx -t`, inside `http {}` unless it has its own (the
// files its ssl_certificate, ssl_certificate_key, access_log, error_log
// and pid name are moved into a temporary directory, the certificate
// and key made), a Caddyfile by `caddy adapt`.
func TestCookbookPeers(t *testing.T) {
	fx := newDocFixtures(t)
	checked := map[string]int{}
	for _, b := range codeBlocks(t, "docs/cookbook.md") {
		var check func(*testing.T, codeBlock, *docFixtures) string
		switch b.lang {
		case "nginx":
			check = checkNginx
		case "caddy":
			check = checkCaddy
		default:
			continue
		}
		checked[b.lang]++
		t.Run(fmt.Sprintf("%s:%d", b.file, b.line), func(t *testing.T) {
			if msg := check(t, b, fx); msg != "" {
				t.Error(msg)
			}
		})
	}
	if checked["nginx"] == 0 || checked["caddy"] == 0 {
		t.Errorf("checked %d nginx and %d caddy blocks in docs/cookbook.md; want some of each", checked["nginx"], checked["caddy"])
	}
}

var (
	nginxHTTP  = regexp.MustCompile(`(?m)^\s*http\s*\{`)
	nginxFiles = regexp.MustCompile(`(?m)^(\s*(ssl_certificate|ssl_certificate_key|access_log|error_log|pid)\s+)(/[^\s;]+)`)
	nginxLine  = regexp.MustCompile(`nginx\.conf:(\d+)`)
)

// checkNginx checks the nginx block b with nginx -t; it returns what
// is wrong, or "".
func checkNginx(t *testing.T, b codeBlock, fx *docFixtures) string {
	nginx := sluicetest.NeedTool(t, "nginx", "nginx")
	dir := t.TempDir()
	text := strings.Join(b.lines, "\n") + "\n"
	var made error
	text = nginxFiles.ReplaceAllStringFunc(text, func(s string) string {
		m := nginxFiles.FindStringSubmatch(s)
		name := dir + m[3]
		switch m[2] {
		case "ssl_certificate":
			made = cmp.Or(made, writeFileAll(name, fx.cert))
		case "ssl_certificate_key":
			made = cmp.Or(made, writeFileAll(name, fx.key))
		default:
			made = cmp.Or(made, os.MkdirAll(filepath.Dir(name), 0o755))
		}
		return m[1] + name
	})
	if made != nil {
		t.Fatal(made)
	}
	// The files an include names relative to the config: Debian's.
	for _, inc := range []string{"fastcgi_params", "mime.types"} {
		data, _ := os.ReadFile(filepath.Join("/etc/nginx", inc))
		if err := os.WriteFile(filepath.Join(dir, inc), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := 0
	if nginxHTTP.MatchString(text) {
		if !strings.Contains(text, "\npid ") && !strings.HasPrefix(text, "pid ") {
			text = "pid " + dir + "/nginx.pid;\n" + text
			before++
		}
	} else {
		text = "pid " + dir + "/nginx.pid;\nevents {}\nhttp {\naccess_log " + dir + "/access.log;\n" + text + "}\n"
		before = 4
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf).CombinedOutput()
	if err == nil {
		return ""
	}
	msg := nginxLine.ReplaceAllStringFunc(string(out), func(s string) string {
		line, _ := strconv.Atoi(nginxLine.FindStringSubmatch(s)[1])
		if line -= before; line < 1 || line > len(b.lines) {
			return fmt.Sprintf("%s:%d", b.file, b.line)
		}
		return fmt.Sprintf("%s:%d", b.file, b.line+line)
	})
	return fmt.Sprintf("%s:%d: this nginx config fails nginx -t: %v\n%s\nchecked as:\n%s", b.file, b.line, err, msg, text)
}

var caddyLine = regexp.MustCompile(`Caddyfile:(\d+)`)

// checkCaddy checks the Caddyfile block b with caddy adapt; it returns
// what is wrong, or "".
func checkCaddy(t *testing.T, b codeBlock, _ *docFixtures) string {
	caddy := sluicetest.NeedTool(t, "caddy", "caddy")
	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	text := strings.Join(b.lines, "\n") + "\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "adapt", "--config", file, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	msg := caddyLine.ReplaceAllStringFunc(string(out), func(s string) string {
		line, _ := strconv.Atoi(caddyLine.FindStringSubmatch(s)[1])
		return fmt.Sprintf("%s:%d", b.file, b.line+line)
	})
	return fmt.Sprintf("%s:%d: this Caddyfile fails caddy adapt: %v\n%s", b.file, b.line, err, msg)
}

// TestCookbookPeersFail shows that the checks of nginx and Caddy configs
// find a broken one, at its line.
func TestCookbookPeersFail(t *testing.T) {
	fx := newDocFixtures(t)
	t.Run("nginx", func(t *testing.T) {
		b := codeBlock{file: "x.md", line: 10, lang: "nginx", lines: []string{"server {", "    listen 80", "}"}}
		if msg := checkNginx(t, b, fx); !strings.Contains(msg, "x.md:13") {
			t.Errorf("a server block without a semicolon: message does not name x.md:13 (its closing brace):\n%s", msg)
		}
	})
	t.Run("caddy", func(t *testing.T) {
		b := codeBlock{file: "x.md", line: 10, lang: "caddy", lines: []string{":80 {", "    no_such_directive", "}"}}
		if msg := checkCaddy(t, b, fx); !strings.Contains(msg, "x.md:12") {
			t.Errorf("an unknown directive: message does not name x.md:12:\n%s", msg)
		}
	})
}

// writeFileAll writes data to the file name, making its directory.
func writeFileAll(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o600)
}
