package config

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
)

// The docs are checked against the code: docs/config.md's limits table
// and component reference are generated from the limits table and from
// the components' options structs and doc comments. TestDocs fails when
// they differ (go test ./config -run TestDocs -update rewrites them), and
// when a key of the file is not documented.

const docsFile = "../docs/config.md"

// generated sections of docs/config.md.
var docSections = []struct {
	name string
	gen  func(t *testing.T) string
}{
	{"limits", limitsReference},
	{"components", componentReference},
	{"log-fields", logFieldsReference},
}

func sectionMarkers(name string) (begin, end string) {
	return "<!-- BEGIN GENERATED " + name + ": go test ./config -run TestDocs -update rewrites this section -->\n",
		"<!-- END GENERATED " + name + " -->\n"
}

func TestDocs(t *testing.T) {
	data, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, sec := range docSections {
		begin, end := sectionMarkers(sec.name)
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the markers of the generated %s section:\n%s%s", docsFile, sec.name, begin, end)
		}
		got, want := text[i+len(begin):j], sec.gen(t)
		if got != want {
			if *update {
				text = text[:i+len(begin)] + want + text[j:]
				continue
			}
			t.Errorf("%s: the %s section is out of date: run go test ./config -run TestDocs -update", docsFile, sec.name)
		}
	}
	if *update {
		if err := os.WriteFile(docsFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every key is documented.
	for _, keys := range [][]string{TopLevelKeys, RouteKeys, SiteKeys, IncludedKeys, LogKeys, LimitKeys, DatabaseKeys, ListenKeys, TLSKeys, HSTSKeys, HTTP3Keys, ACMEKeys, AdminKeys} {
		for _, k := range keys {
			if !strings.Contains(text, "`"+k+"`") && !strings.Contains(text, "`"+k+":") {
				t.Errorf("%s does not document the key %q", docsFile, k)
			}
		}
	}
	for _, r := range components.All() {
		if !strings.Contains(text, "\n### `"+r.Name+"`") {
			t.Errorf("%s has no section for the component %s", docsFile, r.Name)
		}
	}
}

// logFieldsReference is the table of the fields an access log's format
// names (components.LogFields).
func logFieldsReference(*testing.T) string {
	var b strings.Builder
	b.WriteString("| field | what it holds |\n|---|---|\n")
	for _, f := range components.LogFields {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f.Name, strings.ReplaceAll(f.Doc, "|", "\\|"))
	}
	return b.String()
}

func limitsReference(*testing.T) string {
	var b strings.Builder
	b.WriteString("| key | what it bounds | default | example |\n|---|---|---|---|\n")
	for _, l := range limits {
		def := l.deflt
		if l.off != "" {
			def += "; `" + l.off + "` for none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s: %s` |\n", l.key, l.doc, def, l.key, l.example)
	}
	return b.String()
}

// componentDocs holds the components package's documentation, and the
// struct types of the packages whose structs options structs embed.
type componentDocs struct {
	pkg   *doc.Package
	types map[string]*ast.StructType // by package path and name: "…/files.Options"
}

const modulePath = "github.com/sluice-server/sluice"

// parseDir parses the non-test Go files of a package directory.
func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, goparser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func loadComponentDocs(t *testing.T) *componentDocs {
	fset := token.NewFileSet()
	files := parseDir(t, fset, "../components")
	p, err := doc.NewFromFiles(fset, files, modulePath+"/components", doc.PreserveAST)
	if err != nil {
		t.Fatal(err)
	}
	cd := &componentDocs{pkg: p, types: map[string]*ast.StructType{}}
	cd.addTypes(modulePath+"/components", files)
	return cd
}

// addTypes records the struct types of the package pkgPath.
func (cd *componentDocs) addTypes(pkgPath string, files []*ast.File) {
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					cd.types[pkgPath+"."+ts.Name.Name] = st
				}
			}
			return true
		})
	}
}

// structType returns the declaration of the struct type t, parsing its
// package (one of this module's) the first time.
func (cd *componentDocs) structType(t *testing.T, typ reflect.Type) *ast.StructType {
	key := typ.PkgPath() + "." + typ.Name()
	if st := cd.types[key]; st != nil {
		return st
	}
	rel, ok := strings.CutPrefix(typ.PkgPath(), modulePath+"/")
	if !ok {
		t.Errorf("options type %v is not of this module", typ)
		return nil
	}
	cd.addTypes(typ.PkgPath(), parseDir(t, token.NewFileSet(), "../"+rel))
	return cd.types[key]
}

// markdown renders a doc comment as Markdown.
func (cd *componentDocs) markdown(text string) string {
	pr := cd.pkg.Printer()
	pr.HeadingLevel = 4
	pr.DocLinkURL = func(*comment.DocLink) string { return "" }
	// Backquotes in comments are meant as code: do not escape them.
	return strings.ReplaceAll(string(pr.Markdown(cd.pkg.Parser().Parse(text))), "\\`", "`")
}

// firstParagraph returns the first paragraph of a doc comment.
func firstParagraph(text string) string {
	paras := strings.SplitAfter(strings.TrimSpace(text), "\n\n")
	out := paras[0]
	// A paragraph ending in a colon introduces the next one.
	for i := 1; i < len(paras) && strings.HasSuffix(strings.TrimSpace(paras[i-1]), ":"); i++ {
		out += paras[i]
	}
	return strings.TrimSpace(out)
}

func componentReference(t *testing.T) string {
	cd := loadComponentDocs(t)
	funcs := map[string]*doc.Func{}
	for _, f := range cd.pkg.Funcs {
		funcs[f.Name] = f
	}
	for _, ty := range cd.pkg.Types {
		for _, f := range ty.Funcs {
			funcs[f.Name] = f
		}
	}
	docTypes := map[string]*doc.Type{}
	for _, ty := range cd.pkg.Types {
		docTypes[ty.Name] = ty
	}
	var b strings.Builder
	for _, r := range components.All() {
		typeName := r.Options.Name()
		ctor := "New" + strings.TrimSuffix(typeName, "Options")
		fmt.Fprintf(&b, "### `%s`\n\n", r.Name)
		fmt.Fprintf(&b, "A %s", r.Kind)
		if r.Answers {
			fmt.Fprintf(&b, " that answers every request and ends the pipeline")
		} else if r.Stops != "" {
			fmt.Fprintf(&b, " that may answer %s and stop the pipeline", r.Stops)
		}
		if r.Scalar != "" {
			fmt.Fprintf(&b, "; `%s: ARGUMENT` sets `%s`", r.Name, r.Scalar)
		}
		fmt.Fprintf(&b, ". Go: [`components.%s`](https://pkg.go.dev/github.com/sluice-server/sluice/components#%s).\n\n", ctor, ctor)
		// The doc of the component's own type (CGI, Log) when it has
		// one, else the constructor's.
		text := ""
		if ty := docTypes[strings.TrimSuffix(typeName, "Options")]; ty != nil {
			text = ty.Doc
		} else if f := funcs[ctor]; f != nil {
			text = f.Doc
		}
		if text == "" {
			t.Errorf("components: no doc comment for %s", ctor)
		}
		b.WriteString(cd.markdown(firstParagraph(text)))
		b.WriteString("\n")
		fmt.Fprintf(&b, "```yaml\n- %s\n```\n\n", r.Example)
		fields := components.OptionFields(r.Options)
		if len(fields) == 0 {
			b.WriteString("No options.\n\n")
			continue
		}
		b.WriteString("Options:\n\n")
		cd.optionList(t, &b, r, r.Options, fields, "", "")
		b.WriteString("\n")
	}
	return b.String()
}

// optionList writes the list of the options fields of the struct type
// typ, options of component r, with keys prefixed by prefix and lines by
// indent. An option of struct type is followed by its own options,
// indented.
func (cd *componentDocs) optionList(t *testing.T, b *strings.Builder, r *components.Registration, typ reflect.Type, fields []components.OptionField, prefix, indent string) {
	for _, f := range fields {
		fmt.Fprintf(b, "%s- `%s` (%s)", indent, f.Key, optionType(f.Field.Type, contains(r.Paths, prefix+f.Key)))
		// The struct declaring the field: the options struct, or a
		// struct it embeds inline (files.Options in FilesOptions).
		owner := typ
		if len(f.Index) > 1 {
			owner = typ.FieldByIndex(f.Index[:len(f.Index)-1]).Type
		}
		st := cd.structType(t, owner)
		if st == nil {
			t.Errorf("no struct type %v", owner)
			b.WriteString("\n")
			continue
		}
		text := fieldDoc(st, f.Field.Name)
		if text == "" {
			t.Errorf("%v.%s has no doc comment", owner, f.Field.Name)
			b.WriteString("\n")
			continue
		}
		md := strings.TrimSpace(cd.markdown(text))
		b.WriteString(": ")
		for i, line := range strings.Split(md, "\n") {
			if i > 0 && line != "" {
				b.WriteString(indent + "  ")
			}
			b.WriteString(line + "\n")
		}
		sub := f.Field.Type
		if sub.Kind() == reflect.Pointer {
			sub = sub.Elem()
		}
		if sub.Kind() == reflect.Struct && sub != reflect.TypeFor[time.Duration]() {
			cd.optionList(t, b, r, sub, components.OptionFields(sub), prefix+f.Key+".", indent+"  ")
		}
	}
}

// fieldDoc returns the doc comment of the struct field name.
func fieldDoc(st *ast.StructType, name string) string {
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == name && f.Doc != nil {
				return f.Doc.Text()
			}
		}
	}
	return ""
}

// optionType names an option's type for the docs.
func optionType(t reflect.Type, path bool) string {
	switch {
	case path:
		return "path"
	case t == reflect.TypeFor[time.Duration]():
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list of " + plural(optionType(t.Elem(), false))
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return "map"
		}
		return "map of " + plural(optionType(t.Elem(), false))
	case reflect.Pointer:
		return optionType(t.Elem(), path)
	case reflect.Struct:
		return "map"
	}
	return "value"
}

func plural(s string) string {
	switch s {
	case "true or false":
		return "booleans"
	case "map":
		return "maps"
	}
	return s + "s"
}

// TestRegistryExamples: each component's example in the docs decodes
// without error (its options exist and have the right types).
func TestRegistryExamples(t *testing.T) {
	for _, r := range components.All() {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(r.Example), &n); err != nil {
			t.Errorf("%s: example %q: %v", r.Name, r.Example, err)
			continue
		}
		entry := n.Content[0]
		p := &parser{decoder: decoder{file: r.Name}, loader: &Loader{}, dir: "."}
		var arg *yaml.Node
		switch {
		case entry.Kind == yaml.ScalarNode && entry.Value == r.Name:
		case entry.Kind == yaml.MappingNode && len(entry.Content) == 2 && entry.Content[0].Value == r.Name:
			arg = entry.Content[1]
		default:
			t.Errorf("%s: example %q is not a pipeline entry for it", r.Name, r.Example)
			continue
		}
		v := reflect.New(r.Options).Elem()
		switch {
		case arg == nil:
		case arg.Kind == yaml.MappingNode:
			p.options(arg, v, "", r.Name)
		default:
			f, ok := fieldByKey(r.Options, r.Scalar)
			if !ok {
				t.Errorf("%s: shorthand example but no scalar option", r.Name)
				continue
			}
			p.value(arg, v.FieldByIndex(f.Index), r.Scalar)
		}
		if len(p.errs) > 0 {
			t.Errorf("%s: example %q: %v", r.Name, r.Example, p.errs)
		}
	}
}
