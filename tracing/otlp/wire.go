package otlp

import "encoding/binary"

// The protobuf wire format (protobuf.dev's "Encoding"), the little of it
// the exporter writes: a field is a tag, its number and wire type as a
// varint, then a varint, 4 or 8 little-endian bytes, or a length-prefixed
// run of bytes. Written here rather than imported so that the server
// links nothing of google.golang.org (cmd/sluice's TestNoGRPCDependency).

// wireNumber is a field number.
type wireNumber int32

// wireType is a field's wire type.
type wireType int8

const (
	wireVarint  wireType = 0
	wireFixed64 wireType = 1
	wireBytes   wireType = 2
	wireFixed32 wireType = 5
)

func appendTag(b []byte, num wireNumber, t wireType) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|uint64(t))
}

func appendRawVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendRawFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendRawFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendRawBytes(b []byte, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendRawString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
