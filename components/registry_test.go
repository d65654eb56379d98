package components

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/pipe"
)

// TestRegistryEntries: every registration is consistent with its options
// struct: the scalar option and the path options exist (paths are
// strings), the kind is set, an example is given, and the names are
// sorted and unique.
func TestRegistryEntries(t *testing.T) {
	names := Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names() = %q, not sorted", names)
	}
	for _, r := range All() {
		if err := r.check(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		if r.Example == "" || !strings.HasPrefix(r.Example, r.Name) {
			t.Errorf("%s: example %q does not name it", r.Name, r.Example)
		}
		if got, ok := Lookup(r.Name); !ok || got != r {
			t.Errorf("Lookup(%q) = %v, %v", r.Name, got, ok)
		}
	}
	if _, ok := Lookup("no-such-component"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}

// parsePackage parses the package's non-test files, by file name.
func parsePackage(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return fset, files
}

// builtinRegistrations parses the package's files and returns, by the
// file that holds it, the options type of every Register call made from
// an init function (a built-in component registering itself), and the
// names those calls register.
func builtinRegistrations(t *testing.T) (options map[string][]string, names map[string]string) {
	t.Helper()
	options, names = map[string][]string{}, map[string]string{}
	fset, files := parsePackage(t)
	for file, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "init" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if id, isID := ast.Unparen(callee(call)).(*ast.Ident); !ok || !isID || id.Name != "Register" || len(call.Args) != 2 {
					return true
				}
				lit, _ := call.Args[0].(*ast.CompositeLit)
				build, _ := call.Args[1].(*ast.FuncLit)
				if lit == nil || build == nil || build.Type.Params.NumFields() != 2 {
					t.Errorf("%s: Register's arguments are not a Registration literal and a function literal", fset.Position(call.Pos()))
					return true
				}
				if opt, ok := build.Type.Params.List[0].Type.(*ast.Ident); ok {
					options[file] = append(options[file], opt.Name)
				}
				for _, el := range lit.Elts {
					kv, _ := el.(*ast.KeyValueExpr)
					if kv == nil || fmt.Sprint(kv.Key) != "Name" {
						continue
					}
					if lit, ok := kv.Value.(*ast.BasicLit); ok {
						if name, err := strconv.Unquote(lit.Value); err == nil {
							names[name] = file
						}
					}
				}
				return true
			})
		}
	}
	return options, names
}

// callee is the function call calls, or nil.
func callee(call *ast.CallExpr) ast.Expr {
	if call == nil {
		return nil
	}
	if ix, ok := call.Fun.(*ast.IndexExpr); ok { // Register[O](…)
		return ix.X
	}
	return call.Fun
}

// TestRegistryComplete: every constructor of the package of the form
// NewX(XOptions) (pipe.Component, error) is registered, from an init
// function of the file that holds it (each built-in component registers
// itself, as a program's components do), so a component added to the
// package cannot be forgotten by config files.
func TestRegistryComplete(t *testing.T) {
	registered := map[string]bool{}
	for _, r := range All() {
		registered[r.Options.Name()] = true
	}
	selfRegistered, _ := builtinRegistrations(t)
	fset, files := parsePackage(t)
	constructors := 0
	for name, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "New") {
				continue
			}
			if fn.Type.Params.NumFields() != 1 || fn.Type.Results.NumFields() != 2 {
				continue
			}
			param, ok := fn.Type.Params.List[0].Type.(*ast.Ident)
			if !ok || !strings.HasSuffix(param.Name, "Options") {
				continue
			}
			res, ok := fn.Type.Results.List[0].Type.(*ast.SelectorExpr)
			if !ok || res.Sel.Name != "Component" {
				continue
			}
			constructors++
			if !registered[param.Name] {
				t.Errorf("%s: %s(%s) is not in the registry", fset.Position(fn.Pos()), fn.Name.Name, param.Name)
			}
			if !slices.Contains(selfRegistered[name], param.Name) {
				t.Errorf("%s: %s(%s) is not registered by an init function of %s", fset.Position(fn.Pos()), fn.Name.Name, param.Name, name)
			}
		}
	}
	if constructors < 17 {
		t.Errorf("found %d constructors, want the 17 built-in components at least", constructors)
	}
}

// TestRegistryDocumented: the components docs/config.md describes are
// exactly the built-in ones, and each is registered under its name.
// (config's TestDocs checks the other way: every registered component has
// a section there.)
func TestRegistryDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	_, section, _ := strings.Cut(text, "<!-- BEGIN GENERATED components")
	section, _, ok := strings.Cut(section, "<!-- END GENERATED components")
	if !ok {
		t.Fatal("docs/config.md has no generated components section")
	}
	var documented []string
	for _, line := range strings.Split(section, "\n") {
		if name, ok := strings.CutPrefix(line, "### `"); ok {
			documented = append(documented, strings.TrimSuffix(name, "`"))
		}
	}
	_, builtins := builtinRegistrations(t)
	for _, name := range documented {
		if _, ok := Lookup(name); !ok {
			t.Errorf("docs/config.md documents the component %q, which is not registered", name)
		}
		if builtins[name] == "" {
			t.Errorf("docs/config.md documents the component %q, which no file of the package registers", name)
		}
	}
	for name, file := range builtins {
		if !slices.Contains(documented, name) {
			t.Errorf("%s registers %q, which docs/config.md does not document", file, name)
		}
	}
	if len(documented) < 17 {
		t.Errorf("docs/config.md documents %d components: %q", len(documented), documented)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindPipe: "pipe", KindSource: "source", KindFilter: "filter", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

type registerTestOptions struct {
	Name  string            `yaml:"name"`
	Count int               `yaml:"count"`
	Tags  map[string]string `yaml:"tags"`
	_     int               // unexported: not an option
	Skip  string            `yaml:"-"`
	FilesOptions
}

type registerTestInline struct {
	registerTestOptions `yaml:",inline"`
	Extra               bool
}

func registerTestBuild(registerTestOptions, Context) (pipe.Component, error) {
	return pipe.Chain{}, nil
}

// Register refuses, with a panic naming the component, every registration
// a config file could not use.
func TestRegisterPanics(t *testing.T) {
	for _, tt := range []struct {
		r    Registration
		want string
	}{
		{Registration{Name: "files", Kind: KindSource}, `cannot register "files": a component of that name is already registered`},
		{Registration{Name: "", Kind: KindSource}, `cannot register "": a name is a lower-case letter`},
		{Registration{Name: "Upper", Kind: KindSource}, `"Upper": a name is`},
		{Registration{Name: "has-dash", Kind: KindSource}, `"has-dash": a name is`},
		{Registration{Name: "9lives", Kind: KindSource}, `"9lives": a name is`},
		{Registration{Name: "_x", Kind: KindSource}, `"_x": a name is`},
		{Registration{Name: "no_kind"}, `"no_kind": kind Kind(0) is not KindPipe, KindSource or KindFilter`},
		{Registration{Name: "answering_source", Kind: KindSource, Answers: true}, "a source cannot answer every request"},
		{Registration{Name: "bad_scalar", Kind: KindPipe, Scalar: "nmae"}, `scalar option "nmae" is not an option of components.registerTestOptions`},
		{Registration{Name: "hidden_scalar", Kind: KindPipe, Scalar: "skip"}, `scalar option "skip"`},
		{Registration{Name: "bad_path", Kind: KindPipe, Paths: []string{"count"}}, `path option "count" is not a string option`},
		{Registration{Name: "bad_path", Kind: KindPipe, Paths: []string{"count.x"}}, `path option "count.x" is not a string option`},
	} {
		got := registerPanic(func() { Register(tt.r, registerTestBuild) })
		if !strings.HasPrefix(got, "components: ") || !strings.Contains(got, tt.want) {
			t.Errorf("Register(%+v) panicked with %q, want %q", tt.r, got, tt.want)
		}
		if tt.r.Name != "files" {
			if _, ok := Lookup(tt.r.Name); ok {
				t.Errorf("%q registered although Register panicked", tt.r.Name)
			}
		}
	}
	if got := registerPanic(func() { Register[int](Registration{Name: "not_struct", Kind: KindPipe}, nil) }); !strings.Contains(got, "nil build") {
		t.Errorf("nil build: panic %q", got)
	}
	if got := registerPanic(func() {
		Register(Registration{Name: "not_struct", Kind: KindPipe}, func(int, Context) (pipe.Component, error) { return nil, nil })
	}); !strings.Contains(got, `"not_struct": options type int is not a struct`) {
		t.Errorf("options not a struct: panic %q", got)
	}
}

func registerPanic(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return "no panic"
}

// OptionFields lists the exported fields under their yaml keys, with
// inline structs flattened in place and other embedded structs as one
// option.
func TestOptionFields(t *testing.T) {
	var keys []string
	for _, f := range OptionFields(reflect.TypeFor[registerTestInline]()) {
		keys = append(keys, fmt.Sprintf("%s%v", f.Key, f.Index))
	}
	want := "name[0 0] count[0 1] tags[0 2] filesoptions[0 5] extra[1]"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("OptionFields = %s, want %s", got, want)
	}
	var files []string
	for _, f := range OptionFields(reflect.TypeFor[FilesOptions]()) {
		files = append(files, f.Key)
	}
	want = "root index browse max_listing dotfiles follow_symlinks types nosniff precompressed max_age immutable no_cache strip_prefix try max_ranges expiry max_mem_file max_mem_bytes"
	if got := strings.Join(files, " "); got != want {
		t.Errorf("OptionFields(FilesOptions) = %s,\nwant %s", got, want)
	}
}

var registerSeq atomic.Int64

// Register may run while configs are parsed: Lookup, All and Names see a
// registration whole or not at all (run with -race).
func TestRegisterConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("concurrent_%d", registerSeq.Add(1))
		wg.Go(func() {
			Register(Registration{Name: names[i], Kind: KindPipe, Example: names[i]}, registerTestBuild)
		})
		wg.Go(func() {
			for _, r := range All() {
				if r.Name == "" || r.Options == nil {
					t.Errorf("All returned a registration half made: %+v", r)
				}
			}
			Lookup(names[i])
		})
	}
	wg.Wait()
	for _, name := range names {
		if r, ok := Lookup(name); !ok || r.Name != name || !slices.Contains(Names(), name) {
			t.Errorf("%s not registered", name)
		}
	}
}
