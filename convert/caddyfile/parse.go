// Package caddyfile reads Caddy's Caddyfile and translates its site
// blocks into a Sluice config (package convert).
//
// Parse reads one file into directives, with environment variables
// ({$VAR}) replaced, snippets and imports expanded; Translate turns a
// file's directives into a convert.Config and notes on what it left out.
package caddyfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Directive is one line of a Caddyfile — a directive, a site's
// addresses, a named matcher — with its block when it ends in "{".
type Directive struct {
	Name     string   // the first token
	Args     []string // the others, quotes removed
	Block    []*Directive
	HasBlock bool
	File     string
	Line     int
}

// Error is a syntax error at a position of a file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

const maxDepth = 50

// token is one token and the lines it starts and ends on.
type token struct {
	text      string
	quoted    bool
	line, end int
}

// Parse reads data, the text of file, into its top-level directives:
// the global options block (a directive with an empty Name), and the
// sites (Name the first address, Args the others). env looks environment
// variables up for {$VAR} and {$VAR:default} (nil: none are set).
// Snippets are expanded where imported and dropped; an import of a file
// is kept as a directive (see Load). The directives are the caller's. A
// syntax error is an *Error, as is a file that is not UTF-8 text or
// holds control characters. Parse keeps no state: it is safe for
// concurrent use.
func Parse(file string, data []byte, env func(string) (string, bool)) ([]*Directive, error) {
	x := &expander{env: env}
	return x.parse(file, data, 0)
}

// Load reads file with Parse and expands the imports of files too,
// globs and relative paths relative to the importing file's directory.
func Load(file string, env func(string) (string, bool)) ([]*Directive, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	x := &expander{env: env, readFiles: true}
	return x.parse(file, data, 0)
}

// maxDirectives bounds what imports may expand a file to.
const maxDirectives = 100000

type expander struct {
	env       func(string) (string, bool)
	readFiles bool
	snippets  map[string][]*Directive
	budget    int // directives made by imports so far
}

func (x *expander) parse(file string, data []byte, depth int) ([]*Directive, error) {
	if depth > maxDepth {
		return nil, &Error{file, 1, fmt.Sprintf("imports nested more than %d deep", maxDepth)}
	}
	if x.snippets == nil {
		x.snippets = map[string][]*Directive{}
	}
	if err := checkText(file, data); err != nil {
		return nil, err
	}
	data = replaceEnv(data, x.env)
	if err := checkText(file, data); err != nil { // from the environment
		return nil, err
	}
	toks, err := lex(file, data)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks}
	dirs, err := p.block(0)
	if err != nil {
		return nil, err
	}
	return x.expand(file, dirs, depth)
}

// replaceEnv replaces {$NAME} and {$NAME:default} as Caddy does before
// it reads the file: an unset variable without a default is empty.
func replaceEnv(data []byte, env func(string) (string, bool)) []byte {
	s := string(data)
	var b strings.Builder
	for {
		i := strings.Index(s, "{$")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		name, def, hasDef := strings.Cut(s[i+2:i+j], ":")
		if strings.ContainsAny(name, " \t\n{") {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		v, ok := "", false
		if env != nil {
			v, ok = env(name)
		}
		if !ok && hasDef {
			v = def
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return []byte(b.String())
}

// lex splits data into tokens: words separated by white space, quoted
// strings ("..." with \" escapes, `...` raw), comments from a # that
// starts a word to the end of its line, and \ before a newline joining
// two lines.
func lex(file string, data []byte) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '\\' && i+1 < len(data) && data[i+1] == '\n':
			// a continued line: the next line's tokens count as this one's
			i += 2
			if len(toks) > 0 {
				toks[len(toks)-1].end = line + 1
			}
			line++
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			continue
		}
		t := token{line: line}
		var b strings.Builder
		switch c {
		case '"', '`':
			t.quoted = true
			i++
			for {
				if i >= len(data) {
					return nil, &Error{file, t.line, "unexpected end of file: the quote opened here is never closed"}
				}
				d := data[i]
				if d == c {
					i++
					break
				}
				if c == '"' && d == '\\' && i+1 < len(data) && (data[i+1] == '"' || data[i+1] == '\\') {
					b.WriteByte(data[i+1])
					i += 2
					continue
				}
				if d == '\n' {
					line++
				}
				b.WriteByte(d)
				i++
			}
		default:
			for i < len(data) && !isSpace(data[i]) {
				if data[i] == '\\' && i+1 < len(data) && data[i+1] != '\n' {
					i++
				}
				b.WriteByte(data[i])
				i++
			}
		}
		t.text, t.end = b.String(), line
		toks = append(toks, t)
	}
	return toks, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

type parser struct {
	file string
	toks []token
	pos  int
}

// lineTokens returns the tokens of the next line.
func (p *parser) lineTokens() []token {
	if p.pos >= len(p.toks) {
		return nil
	}
	start := p.pos
	end := p.toks[p.pos].end
	p.pos++
	for p.pos < len(p.toks) && p.toks[p.pos].line <= end {
		end = max(end, p.toks[p.pos].end)
		p.pos++
	}
	return p.toks[start:p.pos]
}

// block reads lines up to the "}" that closes the block at depth (the
// end of the file at depth 0).
func (p *parser) block(depth int) ([]*Directive, error) {
	if depth > maxDepth {
		return nil, &Error{p.file, p.toks[p.pos-1].line, fmt.Sprintf("blocks nested more than %d deep", maxDepth)}
	}
	dirs := []*Directive{}
	for {
		ts := p.lineTokens()
		if ts == nil {
			if depth > 0 {
				return nil, &Error{p.file, p.lastLine(), "unexpected end of file: a block is not closed with }"}
			}
			return dirs, nil
		}
		closing := false
		if last := ts[len(ts)-1]; last.text == "}" && !last.quoted {
			if depth == 0 {
				return nil, &Error{p.file, last.line, `unexpected "}": no block is open`}
			}
			ts, closing = ts[:len(ts)-1], true
		}
		if len(ts) > 0 {
			d := &Directive{Name: ts[0].text, File: p.file, Line: ts[0].line}
			if ts[0].quoted && ts[0].text == "{" {
				d.Name = `"{"`
			}
			for _, t := range ts[1:] {
				d.Args = append(d.Args, t.text)
			}
			if last := ts[len(ts)-1]; last.text == "{" && !last.quoted && !closing {
				if len(ts) == 1 {
					d.Name, d.Args = "", nil
				} else {
					d.Args = d.Args[:len(d.Args)-1]
				}
				d.HasBlock = true
				var err error
				if d.Block, err = p.block(depth + 1); err != nil {
					return nil, err
				}
			}
			dirs = append(dirs, d)
		}
		if closing {
			return dirs, nil
		}
	}
}

func (p *parser) lastLine() int {
	if len(p.toks) == 0 {
		return 1
	}
	return p.toks[len(p.toks)-1].end
}

// expandImports replaces import directives: of a snippet defined before,
// with its directives ({args[N]} and {args.N} replaced); of a file (a
// glob), with the file's directives.
func (x *expander) expand(file string, dirs []*Directive, depth int) ([]*Directive, error) {
	if depth > maxDepth {
		return nil, &Error{file, 1, fmt.Sprintf("imports nested more than %d deep", maxDepth)}
	}
	var out []*Directive
	for _, d := range dirs {
		if strings.HasPrefix(d.Name, "(") && strings.HasSuffix(d.Name, ")") && d.HasBlock && len(d.Args) == 0 {
			x.snippets[d.Name[1:len(d.Name)-1]] = d.Block
			continue
		}
		if d.Name != "import" || len(d.Args) == 0 {
			if d.Block != nil {
				b, err := x.expand(file, d.Block, depth+1)
				if err != nil {
					return nil, err
				}
				d.Block = b
			}
			out = append(out, d)
			continue
		}
		if s, ok := x.snippets[d.Args[0]]; ok {
			if x.budget += count(s); x.budget > maxDirectives {
				return nil, &Error{d.File, d.Line, fmt.Sprintf("imports expand to more than %d directives", maxDirectives)}
			}
			inst := instantiate(s, d.Args[1:], d)
			b, err := x.expand(file, inst, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
			continue
		}
		if !x.readFiles {
			out = append(out, d)
			continue
		}
		pattern := d.Args[0]
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(filepath.Dir(file), pattern)
		}
		files, _ := filepath.Glob(pattern)
		if len(files) == 0 {
			out = append(out, d) // left for Translate to note
			continue
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, &Error{d.File, d.Line, fmt.Sprintf("import %q: %v", d.Args[0], err)}
			}
			inc, err := x.parse(f, data, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, instantiate(inc, d.Args[1:], d)...)
		}
	}
	return out, nil
}

// instantiate copies a snippet's directives with its arguments filled in.
func instantiate(dirs []*Directive, args []string, at *Directive) []*Directive {
	var out []*Directive
	fill := func(s string) string {
		for i, a := range args {
			s = strings.ReplaceAll(s, "{args["+strconv.Itoa(i)+"]}", a)
			s = strings.ReplaceAll(s, "{args."+strconv.Itoa(i)+"}", a)
		}
		return s
	}
	for _, d := range dirs {
		c := *d
		c.Name = fill(d.Name)
		c.Args = nil
		for _, a := range d.Args {
			c.Args = append(c.Args, fill(a))
		}
		if d.Block != nil {
			c.Block = instantiate(d.Block, args, at)
		}
		out = append(out, &c)
	}
	return out
}

// count returns the number of directives in dirs, blocks included.
func count(dirs []*Directive) int {
	n := len(dirs)
	for _, d := range dirs {
		n += count(d.Block)
	}
	return n
}

// checkText refuses a file that is not UTF-8 text, or holds control
// characters: a Sluice config cannot hold them.
func checkText(file string, data []byte) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if !utf8.Valid(line) {
			return &Error{file, i + 1, "the file is not UTF-8 text"}
		}
		if j := bytes.IndexFunc(line, isControl); j >= 0 {
			return &Error{file, i + 1, fmt.Sprintf("control character %U", bytes.Runes(line[j:])[0])}
		}
	}
	return nil
}

// isControl reports whether r is a control character other than tab and
// carriage return.
func isControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\r' || r == 0x7f || 0x80 <= r && r < 0xa0 || r == 0xfeff
}
