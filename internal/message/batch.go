package message

import (
	"encoding/binary"
	"fmt"
)

// batchFixedBytes is the size of a SEND_BATCH_MESSAGE element without body and properties:
// TOTALSIZE 4 + MAGICCODE 4 + BODYCRC 4 + FLAG 4 + BODYLENGTH 4 + PROPERTIESLENGTH 2.
const batchFixedBytes = 22

// BatchElement is one message of a SEND_BATCH_MESSAGE body (§9.6). Body and Properties are
// views into the batch body.
type BatchElement struct {
	Flag       int32
	Body       []byte
	Properties []byte
}

// NextBatchElement decodes the element at the start of b into e and returns its size. It
// never panics; an element whose TOTALSIZE disagrees with its fields is an error.
func NextBatchElement(b []byte, e *BatchElement) (int, error) {
	be := binary.BigEndian
	if len(b) < batchFixedBytes {
		return 0, ErrShort
	}
	size := int(int32(be.Uint32(b)))
	if size < batchFixedBytes || size > len(b) {
		return 0, fmt.Errorf("%w: batch element size %d of %d bytes", ErrSize, size, len(b))
	}
	b = b[:size]
	e.Flag = int32(be.Uint32(b[12:]))
	bodyLen := int(int32(be.Uint32(b[16:])))
	if bodyLen < 0 || bodyLen > size-batchFixedBytes {
		return 0, fmt.Errorf("%w: batch element body length %d", ErrSize, bodyLen)
	}
	p := 20
	e.Body = b[p : p+bodyLen : p+bodyLen]
	p += bodyLen
	propLen := int(be.Uint16(b[p:]))
	p += 2
	if p+propLen != size {
		return 0, fmt.Errorf("%w: batch element properties length %d", ErrSize, propLen)
	}
	e.Properties = b[p:size:size]
	return size, nil
}

// DecodeBatch splits a SEND_BATCH_MESSAGE body into its elements.
func DecodeBatch(body []byte) ([]BatchElement, error) {
	var out []BatchElement
	for off := 0; off < len(body); {
		var e BatchElement
		n, err := NextBatchElement(body[off:], &e)
		if err != nil {
			return nil, fmt.Errorf("batch element at byte %d: %w", off, err)
		}
		out = append(out, e)
		off += n
	}
	return out, nil
}

// AppendBatchElement appends one element in the §9.6 encoding (as the Go client's Marshal
// writes it: magic and CRC 0) to dst.
func AppendBatchElement(dst []byte, flag int32, body []byte, properties string) []byte {
	size := batchFixedBytes + len(body) + len(properties)
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(properties)))
	return append(dst, properties...)
}
