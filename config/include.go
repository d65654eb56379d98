package config

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// IncludedKeys are the keys an included file may set: it brings routes
// and sites, and may include further files.
var IncludedKeys = []string{"include", "routes", "sites"}

// source is a file the parser reads: the config file, or one it
// includes.
type source struct {
	file  string   // its name in messages: the includer's directory joined with the path written
	dir   string   // the directory its relative paths are relative to
	chain []string // the absolute names of the files that included it, then its own
	names []string // the same files' names in messages
}

// located is a node and the file it was read from.
type located struct {
	n   *yaml.Node
	src *source
}

// enter makes src the file that errors, warnings and relative paths
// refer to, and returns the function that restores the file before.
func (p *parser) enter(src *source) (restore func()) {
	file, dir := p.file, p.dir
	p.file, p.dir = src.file, src.dir
	return func() { p.file, p.dir = file, dir }
}

// mainSource is the config file's own source.
func (p *parser) mainSource() *source {
	abs, err := filepath.Abs(p.file)
	if err != nil {
		abs = p.file
	}
	return &source{file: p.file, dir: p.dir, chain: []string{abs}, names: []string{p.file}}
}

// included is one file an include names: its source and its top-level
// map (nil for a file with no document).
type included struct {
	src  *source
	root *yaml.Node
}

// hasGlobMeta reports whether an include path is a pattern.
func hasGlobMeta(s string) bool { return strings.ContainsAny(s, `*?[`) }

// readIncludes reads the files the include value n names — a path or a
// list of them, each a file or a glob pattern, relative to the directory
// of from, the file n is in (p's current file) — in the order written,
// a pattern's matches in sorted order. A plain path must name a file; a
// pattern may match none (as nginx's include does), which is a warning.
// Matches whose name starts with a dot (editors' lock and swap files)
// are left out, unless the pattern's own name starts with one. A file
// that includes itself, directly or through others, is an error naming
// the chain. Every file read is added to Config.Files.
func (p *parser) readIncludes(n *yaml.Node, from *source) []included {
	d := deref(n)
	if isNull(d) || d.Kind == yaml.MappingNode {
		p.errorf(n, "include: want a file path or a list of them (glob patterns such as sites/*.yaml too), got %s", describe(n))
		return nil
	}
	var out []included
	for i, pat := range p.stringList(n, "include") {
		e := elem(n, i)
		if pat == "" {
			p.errorf(e, "include: want a file path, got an empty string")
			continue
		}
		path := p.path(pat)
		matches := []string{path}
		if hasGlobMeta(pat) {
			all, err := filepath.Glob(path)
			if err != nil {
				p.errorf(e, "include: %q is not a valid pattern: %v", pat, err)
				continue
			}
			slices.Sort(all)
			dot := strings.HasPrefix(filepath.Base(pat), ".")
			matches = matches[:0]
			for _, m := range all {
				if dot || !strings.HasPrefix(filepath.Base(m), ".") {
					matches = append(matches, m)
				}
			}
			if len(matches) == 0 {
				p.warn(e, "", "include: "+pat+" matches no file")
			}
		}
		for _, m := range matches {
			if inc, ok := p.readInclude(e, m, from); ok {
				out = append(out, inc)
			}
		}
	}
	return out
}

// readInclude reads the included file named file (as shown in messages),
// which the node e of from names.
func (p *parser) readInclude(e *yaml.Node, file string, from *source) (included, bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		p.errorf(e, "include: %v", err)
		return included{}, false
	}
	if i := slices.Index(from.chain, abs); i >= 0 {
		loop := append(slices.Clone(from.names[i:]), file)
		p.errorf(e, "include: %s is a cycle: a file cannot include itself, directly or through others; remove one of these includes", strings.Join(loop, " includes "))
		return included{}, false
	}
	fi, err := os.Stat(file)
	switch {
	case err != nil && os.IsNotExist(err):
		p.errorf(e, "include: %s does not exist (a plain path must name a file; a pattern such as sites/*.yaml may match none)", file)
		return included{}, false
	case err != nil:
		p.errorf(e, "include: %v", err)
		return included{}, false
	case fi.IsDir():
		p.errorf(e, "include: %s is a directory: include its files with a pattern, e.g. %s", file, filepath.Join(file, "*.yaml"))
		return included{}, false
	}
	data, err := os.ReadFile(file)
	if err != nil {
		p.errorf(e, "include: %v", err)
		return included{}, false
	}
	src := &source{
		file:  file,
		dir:   filepath.Dir(file),
		chain: append(slices.Clip(from.chain), abs),
		names: append(slices.Clip(from.names), file),
	}
	if !slices.Contains(p.cfg.Files, file) {
		p.cfg.Files = append(p.cfg.Files, file)
	}
	restore := p.enter(src)
	defer restore()
	root, ok := p.document(data)
	if !ok {
		return included{}, false
	}
	if isNull(root) {
		return included{src: src}, true // an empty file brings nothing
	}
	if root.Kind != yaml.MappingNode {
		hint := ""
		if root.Kind == yaml.SequenceNode {
			hint = " (a list of routes goes under routes:)"
		}
		p.errorf(root, "an included file holds a map of %s, got %s%s", strings.Join(IncludedKeys, ", "), describe(root), hint)
		return included{}, false
	}
	return included{src: src, root: root}, true
}

// document parses data, the current file's text, as one YAML document,
// expands its ${VAR} references and returns its root node: nil for a
// file with no document. It reports syntax errors and a second document.
func (p *parser) document(data []byte) (root *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, true
		}
		p.syntaxError(data, err)
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errorf(&extra, "a config file holds one YAML document; this is a second one")
	} else if err != io.EOF {
		p.syntaxError(data, err)
	}
	root = &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	p.expandEnv(root, map[*yaml.Node]bool{})
	return root, true
}

// includedPairs returns the keys of an included file's map, reporting
// those an included file may not set.
func (p *parser) includedPairs(inc included) []pair {
	pairs, _ := p.mapping(inc.root, "key of an included file", nil)
	out := pairs[:0]
	for _, kv := range pairs {
		if !slices.Contains(IncludedKeys, kv.key.Value) {
			where := "it belongs in the main config file"
			if !slices.Contains(TopLevelKeys, kv.key.Value) {
				where = "the main config file does not know it either" + suggest(kv.key.Value, IncludedKeys)
			}
			p.errorf(kv.key, "%s: an included file holds only %s; %s", kv.key.Value, strings.Join(IncludedKeys, ", "), where)
			continue
		}
		out = append(out, kv)
	}
	return out
}

// topInclude reads the files of a top-level include (n, in from) and
// adds their routes to the top-level routes and their sites to the
// sites.
func (p *parser) topInclude(n *yaml.Node, from *source) {
	for _, inc := range p.readIncludes(n, from) {
		if inc.root == nil {
			continue
		}
		restore := p.enter(inc.src)
		for _, kv := range p.includedPairs(inc) {
			switch kv.key.Value {
			case "routes":
				p.topRoutes = append(p.topRoutes, located{kv.val, inc.src})
			case "sites":
				p.siteLists = append(p.siteLists, located{kv.val, inc.src})
			case "include":
				p.topInclude(kv.val, inc.src)
			}
		}
		restore()
	}
}

// includeEntry returns the value of a routes list entry that is an
// include ({include: …}), or nil for a route.
func includeEntry(n *yaml.Node) (key, val *yaml.Node) {
	n = deref(n)
	if n.Kind == yaml.MappingNode && len(n.Content) >= 2 && deref(n.Content[0]).Value == "include" {
		return n.Content[0], n.Content[1]
	}
	return nil, nil
}

// routeEntries returns the routes of the routes list l, its include
// entries replaced by the routes of the files they name, in order, each
// with the file it was read from. It reports a list that is not one.
func (p *parser) routeEntries(l located) []located {
	restore := p.enter(l.src)
	defer restore()
	n := deref(l.n)
	switch {
	case isNull(n) || n.Kind == yaml.SequenceNode && len(n.Content) == 0:
		p.errorf(n, "routes is empty: a config file needs at least one route, with a match (the paths it serves) and a pipeline (the components that answer), e.g. %s", routesExample)
		return nil
	case n.Kind != yaml.SequenceNode:
		p.errorf(n, "routes: want a list of routes (each entry starting with \"- \"), each with a match and a pipeline, got %s", describe(n))
		return nil
	}
	var out []located
	for _, e := range n.Content {
		key, val := includeEntry(e)
		if key == nil {
			out = append(out, located{e, l.src})
			continue
		}
		if m := deref(e); len(m.Content) > 2 {
			p.errorf(m.Content[2], "an include entry of a routes list holds include alone; %q belongs to a route (each route starts with \"- \")", m.Content[2].Value)
			continue
		}
		out = append(out, p.routeInclude(val, l.src)...)
	}
	return out
}

// routeInclude returns the routes of the files an include entry of a
// routes list (n, in from) names: their routes lists and, in turn, their
// includes'. Sites are refused there.
func (p *parser) routeInclude(n *yaml.Node, from *source) []located {
	var out []located
	for _, inc := range p.readIncludes(n, from) {
		if inc.root == nil {
			continue
		}
		restore := p.enter(inc.src)
		for _, kv := range p.includedPairs(inc) {
			switch kv.key.Value {
			case "routes":
				out = append(out, p.routeEntries(located{kv.val, inc.src})...)
			case "include":
				out = append(out, p.routeInclude(kv.val, inc.src)...)
			case "sites":
				p.errorf(kv.key, "sites: this file is included in a routes list, which takes routes only; include it at the top level (include: %s) to add its sites", inc.src.file)
			}
		}
		restore()
	}
	return out
}
