package quicsteer

import (
	"encoding/binary"
	"testing"
)

// The program and Select agree on every payload, for tables made from the
// fuzzer's bytes too.
func FuzzProgram(f *testing.F) {
	f.Add(short(id(0x11111111, 5)), []byte{0x11, 0x11, 0x11, 0x11, 0, 1})
	f.Add(long(id(0x22222222, 5)), []byte{0x22, 0x22, 0x22, 0x22, 3, 2})
	f.Add(long([]byte{1, 2, 3}), []byte{})
	f.Add([]byte{0xc0, 0, 0, 0, 1, 20, 1}, []byte{1, 2, 3, 4, 5})
	f.Add([]byte{}, []byte{9})
	f.Fuzz(func(t *testing.T, p, spec []byte) {
		tab := Table{Owners: map[uint32]uint32{}}
		for len(spec) >= 5 && len(tab.Owners) < 16 {
			tab.Owners[binary.BigEndian.Uint32(spec)] = uint32(spec[4])
			spec = spec[5:]
		}
		for _, b := range spec[:min(len(spec), 16)] {
			tab.Current = append(tab.Current, uint32(b))
		}
		if got, want := run(t, tab, p), tab.Select(p); got != want {
			t.Fatalf("program(%x) = %d, Select = %d (table %v)", p, got, want, tab)
		}
	})
}
