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

// TestRegistryComplete: every constructor of the package of the form
// NewX(XOptions) (pipe.Component, error) is registered, so a component
// added to the package cannot be forgotten by config files.
func TestRegistryComplete(t *testing.T) {
	registered := map[string]bool{}
	for _, r := range All() {
		registered[r.Options.Name()] = true
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
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
			if !registered[param.Name] {
				t.Errorf("%s: %s(%s) is not in the registry (registry.go)", fset.Position(fn.Pos()), fn.Name.Name, param.Name)
			}
		}
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
	want = "root index browse max_listing dotfiles follow_symlinks types nosniff precompressed max_age immutable no_cache strip_prefix try max_ranges expiry"
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
