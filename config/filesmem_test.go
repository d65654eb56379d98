package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"go.yaml.in/yaml/v3"
)

// TestFilesMemorySizes: files' max_mem_file and max_mem_bytes take sizes
// as every whole-number option does, and a bad one fails the load with
// the option's name.
func TestFilesMemorySizes(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("{root: ., max_mem_file: 128KiB, max_mem_bytes: 1MB}"), &n); err != nil {
		t.Fatal(err)
	}
	p := &parser{decoder: decoder{file: "t.yaml"}, loader: &Loader{}, dir: "."}
	var o components.FilesOptions
	p.options(n.Content[0], reflect.ValueOf(&o).Elem(), "", "files")
	if len(p.errs) > 0 {
		t.Fatal(p.errs)
	}
	if o.MemFileMax == nil || *o.MemFileMax != 128<<10 || o.MemBytesMax == nil || *o.MemBytesMax != 1000000 {
		t.Errorf("max_mem_file %v, max_mem_bytes %v; want 131072 and 1000000", o.MemFileMax, o.MemBytesMax)
	}

	dir := t.TempDir()
	for _, tt := range []struct{ opts, want string }{
		{"max_mem_file: 0, max_mem_bytes: 64MiB", ""},
		{"max_mem_file: lots", "max_mem_file: want a whole number"},
		{"max_mem_file: 12QB", "max_mem_file: want a number of bytes"},
		{"max_mem_bytes: -1", "max_mem_bytes must not be negative"},
	} {
		_, err := parseString(t, dir, "routes: [{match: /, pipeline: [files: {root: .,"+tt.opts+"}]}]\n")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.opts, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one saying %q", tt.opts, err, tt.want)
		}
	}
}
