package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// positions maps the JSON pointer of every value in a document to the byte
// offset where that value starts. It is built by scanning the raw bytes with
// a token decoder, which also rejects duplicate object keys: encoding/json
// would silently keep the last one, and a policy must not mean two things.
type positions map[string]int

func scanPositions(data []byte) (positions, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	pos := positions{}
	if err := scanValue(dec, data, "", pos); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &json.SyntaxError{Offset: dec.InputOffset()}
	}
	return pos, nil
}

// duplicateKeyError is a syntax-level problem with an offset, like
// json.SyntaxError.
type duplicateKeyError struct {
	key    string
	offset int
}

func (e *duplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %q", e.key) }

func scanValue(dec *json.Decoder, data []byte, ptr string, pos positions) error {
	pos[ptr] = valueStart(data, int(dec.InputOffset()))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			keyAt := valueStart(data, int(dec.InputOffset()))
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key := tok.(string)
			if seen[key] {
				return &duplicateKeyError{key: key, offset: keyAt}
			}
			seen[key] = true
			if err := scanValue(dec, data, ptr+"/"+escapePointer(key), pos); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := scanValue(dec, data, ptr+"/"+strconv.Itoa(i), pos); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// valueStart skips the separators the decoder has not consumed yet.
func valueStart(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// syntaxOffset extracts the offset of a JSON syntax problem.
func syntaxOffset(err error) (int, bool) {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return int(se.Offset), true
	}
	var de *duplicateKeyError
	if errors.As(err, &de) {
		return de.offset, true
	}
	return 0, false
}
