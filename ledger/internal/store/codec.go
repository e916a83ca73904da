package store

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Values are stored compressed when that makes them smaller: a value of
// compressMin bytes or more becomes the byte s2Marker followed by an S2
// block (klauspost/compress, which Badger links already: S2 is the fastest
// of its codecs, and the committer compresses every value it writes).
// Anything else is stored as it is. No JSON document starts with
// s2Marker, so values stored before compression, or too small for it, read
// as they are. The journal holds what Badger holds.

// compressMin is the smallest value worth compressing: smaller ones (index
// entries, the chain's head, short documents) gain little.
const compressMin = 192

// s2Marker starts a compressed value: it is not UTF-8, so no JSON
// document starts with it.
const s2Marker = 0xff

// encodeValue is b as stored.
func encodeValue(b []byte) []byte {
	if len(b) < compressMin {
		return b
	}
	c := make([]byte, 1+s2.MaxEncodedLen(len(b)))
	c[0] = s2Marker
	c = c[:1+len(s2.Encode(c[1:], b))]
	if len(c) >= len(b) {
		return b
	}
	return c
}

// decodeValue is a stored value as it was written.
func decodeValue(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != s2Marker {
		return b, nil
	}
	out, err := s2.Decode(nil, b[1:])
	if err != nil {
		return nil, fmt.Errorf("decompress a value: %w", err)
	}
	return out, nil
}
