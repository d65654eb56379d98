package disk

import (
	"os"
	"path/filepath"
	"testing"
)

// readHead takes any bytes as an object file: it never panics, and what
// it accepts is consistent with the file.
func FuzzReadHead(f *testing.F) {
	dir := f.TempDir()
	good := make([]byte, preambleSize)
	encodePreamble(good, 3, 4, 5)
	good = append(good, "keyheadbody!"...)
	f.Add(good)
	f.Add(good[:20])
	bad := append([]byte(nil), good...)
	bad[11] = 0x7f // a huge key length
	f.Add(bad)
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "obj")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		p, head, err := readHead(fh, make([]byte, 16))
		if err != nil {
			return
		}
		if int64(len(head)) != p.bodyOffset() || p.bodyOffset() > int64(len(data)) {
			t.Fatalf("readHead(%q) = %+v with %d bytes of head", data, p, len(head))
		}
		if validObject(hashKey(string(head[preambleSize:preambleSize+p.keyLen])), path, int64(len(data)), nil) !=
			(p.bodyLen >= 0 && p.bodyOffset()+p.bodyLen == int64(len(data))) {
			t.Fatalf("validObject(%q) disagrees with the preamble %+v", data, p)
		}
	})
}
