package disk

import (
	"strconv"
	"testing"
)

// A hit: open the file, read its head, check the key, record the use,
// close. The body is not read: a hit hands the file to sendfile(2).
func BenchmarkGetHit(b *testing.B) {
	s := open(b, b.TempDir(), Options{})
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = "GET https://example.com/object/" + strconv.Itoa(i)
		put(b, s, keys[i], "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nCache-Control: max-age=60\r\n", pattern(keys[i], 0, 4096))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		o, err := s.Get(keys[i&255])
		if err != nil {
			b.Fatal(err)
		}
		o.Close()
	}
}

// A whole write: create, write the body, commit (rename and count under
// the flock), replacing the object stored under the key.
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{4 << 10, 100 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KB", func(b *testing.B) {
			s := open(b, b.TempDir(), Options{})
			body := pattern("k", 0, size)
			head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for i := 0; b.Loop(); i++ {
				w, err := s.Create(key(i), head)
				if err != nil {
					b.Fatal(err)
				}
				w.Write(body)
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var key = func(i int) string { return "GET https://example.com/object/" + strconv.Itoa(i&255) }

// The shared total's critical section alone: flock, read the total,
// write it back changed, unlock. Every write and removal pays it once.
func BenchmarkCounter(b *testing.B) {
	s := open(b, b.TempDir(), Options{})
	b.ReportAllocs()
	for b.Loop() {
		s.locked(func(total *int64) error {
			*total++
			return nil
		})
	}
}

// A Rescan of 1,000 objects, which recounts the total by stat(2) of
// each file: what a periodic scan would cost instead of the counter.
func BenchmarkRescan(b *testing.B) {
	s := open(b, b.TempDir(), Options{})
	for i := range 1000 {
		put(b, s, strconv.Itoa(i), "", []byte("x"))
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Rescan(); err != nil {
			b.Fatal(err)
		}
	}
}
