package cache

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"
)

// storeCopy copies exactly the source, whatever its length and the
// destination's alignment, and writes nothing around it. Without the
// race detector on amd64 this is the non-temporal copy (make test-alloc
// runs it so); with it, copy.
func TestStoreCopy(t *testing.T) {
	src := make([]byte, 3*chunkSize)
	rand.Read(src)
	sizes := []int{0, 1, 63, 64, 65, minNonTemporal - 1, minNonTemporal, minNonTemporal + 1, 4 << 10, 4<<10 + 17, chunkSize, 3*chunkSize - 3}
	for _, n := range sizes {
		for _, off := range []int{0, 1, 15, 16, 33, 63} {
			for _, soff := range []int{0, 1, 3} {
				t.Run(fmt.Sprintf("n=%d/off=%d/soff=%d", n, off, soff), func(t *testing.T) {
					if soff+n > len(src) {
						t.Skip()
					}
					dst := bytes.Repeat([]byte{0xAA}, off+n+100)
					if got := storeCopy(dst[off:off+n], src[soff:soff+n]); got != n {
						t.Errorf("storeCopy returned %d, want %d", got, n)
					}
					if !bytes.Equal(dst[off:off+n], src[soff:soff+n]) {
						t.Error("the copy differs from the source")
					}
					if bytes.Count(dst[:off], []byte{0xAA}) != off || bytes.Count(dst[off+n:], []byte{0xAA}) != 100 {
						t.Error("storeCopy wrote outside the destination")
					}
				})
			}
		}
	}
	// A destination too short is refused before anything is written.
	dst := bytes.Repeat([]byte{0xAA}, 2*minNonTemporal)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("storeCopy into a destination too short did not panic")
			}
		}()
		storeCopy(dst[:minNonTemporal], src[:minNonTemporal+64])
	}()
	if bytes.Count(dst, []byte{0xAA}) != len(dst) {
		t.Error("storeCopy into a destination too short wrote to it")
	}
}
