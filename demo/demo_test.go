package demo_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/demo"
)

func TestFS(t *testing.T) {
	fsys := demo.FS()
	for _, name := range []string{"index.html", "about/index.html", "hello.txt", "style.css"} {
		b, err := fs.ReadFile(fsys, name)
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	index, _ := fs.ReadFile(fsys, "index.html")
	for _, want := range []string{`href="/hello.txt"`, `href="/about/"`, `href="/style.css"`, "Sluice"} {
		if !strings.Contains(string(index), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}

func ExampleFS() {
	b, _ := fs.ReadFile(demo.FS(), "hello.txt")
	fmt.Print(string(b))
	// Output: Hello from Sluice!
}
