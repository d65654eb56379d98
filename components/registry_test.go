package components

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
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
		keys := registryOptionKeys(r.Options)
		if r.Scalar != "" && keys[r.Scalar] == nil {
			t.Errorf("%s: scalar option %q is not a field of %s (keys %v)", r.Name, r.Scalar, r.Options, keys)
		}
		for _, p := range r.Paths {
			f := keys[p]
			if f == nil || f.Type.Kind() != reflect.String {
				t.Errorf("%s: path option %q is not a string field of %s", r.Name, p, r.Options)
			}
		}
		if r.Kind < KindPipe || r.Kind > KindFilter {
			t.Errorf("%s: kind %v", r.Name, r.Kind)
		}
		if r.Answers && r.Kind != KindPipe {
			t.Errorf("%s: only a pipe answers every request itself", r.Name)
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

func registryOptionKeys(t reflect.Type) map[string]*reflect.StructField {
	keys := map[string]*reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if k := OptionKey(f); k != "" {
			keys[k] = &f
		}
	}
	return keys
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
