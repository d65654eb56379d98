package disk

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
)

// An object file is a fixed preamble, the key, the head and the body:
//
//	0   8  magic "SLDISK01"
//	8   4  key length, little-endian
//	12  4  head length
//	16  8  body length; -1 until the writer commits
//	24  8  reserved, zero
//	32     key, head, body
//
// A file is complete when its body length is set and its size is the
// sum: Rescan removes any other.
const (
	magic        = "SLDISK01"
	preambleSize = 32

	maxKeySize  = 64 << 10
	maxHeadSize = 16 << 20

	// blockSize is what a file is charged in multiples of: the unit a
	// file system allocates, so the budget is close to the space used.
	blockSize = 4096
)

var errCorrupt = errors.New("disk: not a complete object file")

// hash names an object's file: the first 128 bits of SHA-256 of its key,
// which no one can steer two keys onto.
type hash [16]byte

func hashKey(key string) hash {
	sum := sha256.Sum256([]byte(key))
	return hash(sum[:16])
}

// path is dir/h0/h1/hex: two levels of 256 directories each, made in
// one allocation.
func (s *Store) path(h hash) string {
	sep := byte(filepath.Separator)
	b := make([]byte, 0, len(s.dir)+1+3+3+32)
	b = append(b, s.dir...)
	b = append(b, sep)
	b = hex.AppendEncode(b, h[:1])
	b = append(b, sep)
	b = hex.AppendEncode(b, h[1:2])
	b = append(b, sep)
	b = hex.AppendEncode(b, h[:])
	return string(b)
}

func parseName(name string) (hash, bool) {
	var h hash
	if len(name) != 32 {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(name)); err != nil {
		return h, false
	}
	// Only lower case: the name must be the one path makes.
	for _, c := range name {
		if c >= 'A' && c <= 'F' {
			return h, false
		}
	}
	return h, true
}

func encodePreamble(p []byte, keyLen, headLen int, bodyLen int64) {
	copy(p, magic)
	binary.LittleEndian.PutUint32(p[8:], uint32(keyLen))
	binary.LittleEndian.PutUint32(p[12:], uint32(headLen))
	binary.LittleEndian.PutUint64(p[16:], uint64(bodyLen))
	clear(p[24:preambleSize])
}

// preamble is a parsed object file preamble.
type preamble struct {
	keyLen, headLen int64
	bodyLen         int64 // -1: not committed
}

func (p preamble) bodyOffset() int64 { return preambleSize + p.keyLen + p.headLen }

func parsePreamble(b []byte) (preamble, error) {
	if len(b) < preambleSize || string(b[:8]) != magic {
		return preamble{}, errCorrupt
	}
	p := preamble{
		keyLen:  int64(binary.LittleEndian.Uint32(b[8:])),
		headLen: int64(binary.LittleEndian.Uint32(b[12:])),
		bodyLen: int64(binary.LittleEndian.Uint64(b[16:])),
	}
	if p.keyLen > maxKeySize || p.headLen > maxHeadSize || p.bodyLen < -1 {
		return preamble{}, errCorrupt
	}
	return p, nil
}

// readHead reads the preamble, key and head of the object file f into
// buf (grown when too small) and returns them.
func readHead(f *os.File, buf []byte) (preamble, []byte, error) {
	n, _ := f.ReadAt(buf, 0)
	if n < preambleSize {
		return preamble{}, nil, errCorrupt
	}
	p, err := parsePreamble(buf[:n])
	if err != nil {
		return p, nil, err
	}
	need := int(p.bodyOffset())
	if need > n {
		if need > len(buf) {
			nb := make([]byte, need)
			copy(nb, buf[:n])
			buf = nb
		}
		if _, err := f.ReadAt(buf[n:need], int64(n)); err != nil {
			return p, nil, errCorrupt
		}
	}
	return p, buf[:need], nil
}

// charge is what a file of size bytes counts against the budget.
func charge(size int64) int64 {
	return (size + blockSize - 1) / blockSize * blockSize
}
