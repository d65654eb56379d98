package quicsteer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// short returns a short-header payload to connection ID id.
func short(id []byte) []byte {
	p := append([]byte{0x40}, id...)
	return append(p, bytes.Repeat([]byte{0xaa}, 20)...)
}

// long returns a long-header (Initial) payload to connection ID id.
func long(id []byte) []byte {
	p := []byte{0xc0, 0, 0, 0, 1, byte(len(id))}
	p = append(p, id...)
	p = append(p, 8, 1, 2, 3, 4, 5, 6, 7, 8)
	return append(p, bytes.Repeat([]byte{0}, 1200)...)
}

func id(tag uint32, rest uint64) []byte {
	b := make([]byte, ConnIDLen)
	binary.BigEndian.PutUint32(b, tag)
	binary.BigEndian.PutUint64(b[TagLen:], rest)
	return b
}

// run runs t's program on p in x/net/bpf's interpreter, which follows the
// kernel's classic BPF: a load past the end returns 0.
func run(t *testing.T, tab Table, p []byte) uint32 {
	t.Helper()
	raw, err := tab.Program()
	if err != nil {
		t.Fatal(err)
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the program does not disassemble")
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	n, err := vm.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

var tables = map[string]Table{
	"two":      {Owners: map[uint32]uint32{0x11111111: 0, 0x22222222: 1}, Current: []uint32{0, 1}},
	"reloaded": {Owners: map[uint32]uint32{0x11111111: 0, 0x22222222: 1, 0x33333333: 2, 0x44444444: 3}, Current: []uint32{3, 2}},
	"nobody":   {},
}

func TestSelect(t *testing.T) {
	two, reloaded := tables["two"], tables["reloaded"]
	unknown := id(0x99999999, 7)
	tests := []struct {
		name string
		tab  Table
		p    []byte
		want uint32
	}{
		{"short, first tag", two, short(id(0x11111111, 5)), 0},
		{"short, second tag", two, short(id(0x22222222, 5)), 1},
		{"long, second tag", two, long(id(0x22222222, 5)), 1},
		{"old generation keeps its datagrams", reloaded, short(id(0x11111111, 1)), 0},
		{"new generation", reloaded, long(id(0x44444444, 1)), 3},
		// (0x99999999 ^ 0x00000000) % 2 = 1: the second current socket, 2.
		{"client's random ID: a current socket", reloaded, long(unknown), 2},
		{"unknown tag, short: a current socket", reloaded, short(unknown), 2},
		{"another unknown ID", reloaded, short(id(0x99999998, 0)), 3},
		{"long, connection ID shorter than 8", two, long([]byte{0x11, 0x11, 0x11, 0x11}), Fallback},
		{"too short", two, []byte{0x40, 0x11, 0x11, 0x11, 0x11}, Fallback},
		{"empty", two, nil, Fallback},
		{"no current sockets", tables["nobody"], short(unknown), Fallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tab.Select(tt.p); got != tt.want {
				t.Errorf("Select(%x) = %d, want %d", tt.p, got, tt.want)
			}
			if got := run(t, tt.tab, tt.p); got != tt.want {
				t.Errorf("program(%x) = %d, want %d", tt.p, got, tt.want)
			}
		})
	}
}

// A client's first Initial packets and the 0-RTT ones that follow carry
// the connection ID it chose: they all reach the same socket.
func TestSelectSameIDSameSocket(t *testing.T) {
	tab := tables["reloaded"]
	for i := range uint64(64) {
		cid := id(uint32(i*2654435761), i)
		initial, zeroRTT := long(cid), long(cid)
		zeroRTT[0] = 0xd0
		if a, b := tab.Select(initial), tab.Select(zeroRTT); a != b || a == Fallback {
			t.Fatalf("%x: Initial to %d, 0-RTT to %d", cid, a, b)
		}
	}
}

func TestGenerator(t *testing.T) {
	g := Generator{Tag: 0xdeadbeef}
	a, err := g.GenerateConnectionID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := g.GenerateConnectionID()
	if a.Len() != ConnIDLen || g.ConnectionIDLen() != ConnIDLen {
		t.Fatalf("length %d, %d", a.Len(), g.ConnectionIDLen())
	}
	if tag, ok := TagOf(a.Bytes()); !ok || tag != g.Tag {
		t.Errorf("TagOf(%x) = %x, %v", a.Bytes(), tag, ok)
	}
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two connection IDs alike: %x", a.Bytes())
	}
	if _, ok := TagOf([]byte{1, 2, 3}); ok {
		t.Error("a 3-byte ID has a tag")
	}
	// The ID steers to its owner, as a short header and as a long one.
	tab := Table{Owners: map[uint32]uint32{g.Tag: 5}, Current: []uint32{0}}
	if i, j := tab.Select(short(a.Bytes())), tab.Select(long(a.Bytes())); i != 5 || j != 5 {
		t.Errorf("steered to %d and %d, want 5", i, j)
	}
}

func TestProgramTooLarge(t *testing.T) {
	owners := map[uint32]uint32{}
	for i := range uint32(maxOwners + 1) {
		owners[i] = i
	}
	if _, err := (Table{Owners: owners}).Program(); err == nil {
		t.Error("a table of 1,001 owners compiled")
	}
	owners = map[uint32]uint32{}
	cur := make([]uint32, maxOwners)
	for i := range uint32(maxOwners) {
		owners[i+1<<20] = i
		cur[i] = i
	}
	raw, err := (Table{Owners: owners, Current: cur}).Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 4096 {
		t.Errorf("%d instructions, past the kernel's 4,096", len(raw))
	}
}
