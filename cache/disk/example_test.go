package disk_test

import (
	"fmt"
	"io"
	"os"

	"github.com/sluice-server/sluice/cache/disk"
)

// Store an object, read it while it is written and after, from this
// Store and from another opened on the same directory (as another
// worker process would).
func Example() {
	dir, _ := os.MkdirTemp("", "disk-example")
	defer os.RemoveAll(dir)
	s, err := disk.Open(dir, disk.Options{Size: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	w, _ := s.Create("GET https://example.com/", []byte("200 text/plain"))
	reader, _ := w.Object() // a client collapsed onto the fetch
	w.Write([]byte("hello, "))
	n, complete := reader.Size()
	fmt.Println("while written:", n, complete)
	w.Write([]byte("world"))
	w.Commit()
	n, complete = reader.Size()
	fmt.Println("committed:", n, complete)
	reader.Close()

	other, _ := disk.Open(dir, disk.Options{Size: 64 << 20})
	defer other.Close()
	o, err := other.Get("GET https://example.com/")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer o.Close()
	body, _ := io.ReadAll(io.NewSectionReader(o.File(), o.BodyOffset(), 12))
	fmt.Printf("%s: %s\n", o.Head(), body)

	s.Purge("GET https://example.com/")
	_, err = other.Get("GET https://example.com/")
	fmt.Println(err)
	// Output:
	// while written: 7 false
	// committed: 12 true
	// 200 text/plain: hello, world
	// disk: no stored object
}
