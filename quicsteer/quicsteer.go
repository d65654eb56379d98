package quicsteer

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/bpf"
)

// Sizes of the connection IDs a Generator makes.
const (
	// TagLen is the length of the tag, the first bytes of a connection ID.
	TagLen = 4
	// ConnIDLen is the length of a connection ID: the tag and 8 random
	// bytes.
	ConnIDLen = TagLen + 8
)

// Fallback is what the program returns for a datagram it cannot steer
// (too short to hold a connection ID, or a long header whose connection
// ID is shorter than 8 bytes): an index past any group's end, which
// leaves the choice to the kernel's hash of addresses and ports.
const Fallback = ^uint32(0)

// minLen is the shortest payload the program steers: a long header's
// connection ID (offset 6) with 8 bytes to read.
const minLen = 6 + 8

// Generator makes connection IDs that carry Tag: a
// quic.ConnectionIDGenerator for quic.Transport.ConnectionIDGenerator.
// The zero value makes IDs with tag 0. Safe for concurrent use.
type Generator struct {
	// Tag is the process's tag, unique among the live ones of a group.
	Tag uint32
}

var _ quic.ConnectionIDGenerator = Generator{}

// GenerateConnectionID returns a new connection ID: the tag, big-endian,
// then 8 random bytes.
func (g Generator) GenerateConnectionID() (quic.ConnectionID, error) {
	var b [ConnIDLen]byte
	binary.BigEndian.PutUint32(b[:TagLen], g.Tag)
	if _, err := rand.Read(b[TagLen:]); err != nil {
		return quic.ConnectionID{}, err
	}
	return quic.ConnectionIDFromBytes(b[:]), nil
}

// ConnectionIDLen returns ConnIDLen.
func (Generator) ConnectionIDLen() int { return ConnIDLen }

// TagOf returns the tag of a connection ID, and whether it is long
// enough to have one.
func TagOf(id []byte) (uint32, bool) {
	if len(id) < TagLen {
		return 0, false
	}
	return binary.BigEndian.Uint32(id), true
}

// Table says where the datagrams of a SO_REUSEPORT group go. Indices are
// the sockets' places in the group: the order in which they joined it
// (bound), which the kernel changes when one closes, the last taking the
// closed one's place; so the holder of the group should keep every
// socket open for as long as it steers by index. A Table is a value; its
// methods do not modify it.
type Table struct {
	// Owners maps each live tag to the index of the socket of the
	// process that issues it.
	Owners map[uint32]uint32
	// Current lists the indices of the sockets that take new
	// connections. Empty: new connections go where the kernel's hash
	// sends them.
	Current []uint32
}

// Select returns the index of the socket that the table's program sends
// a datagram with UDP payload p to (Fallback: the kernel's hash).
func (t Table) Select(p []byte) uint32 {
	if len(p) < minLen {
		return Fallback
	}
	off := 1
	if p[0]&0x80 != 0 {
		if p[5] < 8 {
			return Fallback
		}
		off = 6
	}
	tag := binary.BigEndian.Uint32(p[off:])
	if i, ok := t.Owners[tag]; ok {
		return i
	}
	if len(t.Current) == 0 {
		return Fallback
	}
	h := tag ^ binary.BigEndian.Uint32(p[off+4:])
	return t.Current[h%uint32(len(t.Current))]
}

// maxOwners bounds the table's size, so that its program stays within
// the kernel's 4,096 instructions.
const maxOwners = 1000

// Program compiles the table to classic BPF for SO_ATTACH_REUSEPORT_CBPF:
// run on a datagram's UDP payload, it returns Select's index. It fails
// for a table of more than 1,000 owners or current sockets.
func (t Table) Program() ([]bpf.RawInstruction, error) {
	if len(t.Owners) > maxOwners || len(t.Current) > maxOwners {
		return nil, errors.New("quicsteer: too many sockets to steer among")
	}
	p := []bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtLen},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: minLen, SkipTrue: 1},
		bpf.RetConstant{Val: Fallback},
		bpf.LoadAbsolute{Off: 0, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x80, SkipTrue: 2},
		bpf.LoadConstant{Dst: bpf.RegX, Val: 1}, // short header: the connection ID at 1
		bpf.Jump{Skip: 4},
		bpf.LoadAbsolute{Off: 5, Size: 1}, // long header: its length at 5
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 8, SkipTrue: 1},
		bpf.RetConstant{Val: Fallback},
		bpf.LoadConstant{Dst: bpf.RegX, Val: 6}, // and the connection ID at 6
		bpf.LoadIndirect{Off: 0, Size: 4},       // A = the tag
	}
	for _, tag := range slices.Sorted(maps.Keys(t.Owners)) { // the same table, the same program
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: tag, SkipFalse: 1},
			bpf.RetConstant{Val: t.Owners[tag]},
		)
	}
	if len(t.Current) == 0 {
		p = append(p, bpf.RetConstant{Val: Fallback})
		return bpf.Assemble(p)
	}
	p = append(p,
		bpf.StoreScratch{Src: bpf.RegA, N: 0},
		bpf.LoadIndirect{Off: 4, Size: 4},
		bpf.LoadScratch{Dst: bpf.RegX, N: 0},
		bpf.ALUOpX{Op: bpf.ALUOpXor},
		bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: uint32(len(t.Current))},
	)
	for i, idx := range t.Current {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(i), SkipFalse: 1},
			bpf.RetConstant{Val: idx},
		)
	}
	p = append(p, bpf.RetConstant{Val: Fallback}) // not reached
	return bpf.Assemble(p)
}

// AttachError is Attach's error when the kernel (or the platform)
// refuses the program.
type AttachError struct{ Err error }

func (e *AttachError) Error() string {
	return "SO_ATTACH_REUSEPORT_CBPF: " + e.Err.Error()
}

func (e *AttachError) Unwrap() error { return e.Err }
