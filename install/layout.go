package install

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Edits that keep a hand-written file readable: a new element or member is
// written after the last one, on its own line, indented like it. sjson's
// Delete takes out exactly such a trailing ",<newline><indent>value", so
// Remove restores the file byte for byte. Where the layout cannot be read
// (an empty or one-line container), sjson writes it compactly.

// appendElem appends the JSON value elem to the array at path.
func appendElem(doc []byte, path string, elem []byte) ([]byte, error) {
	n := gjson.GetBytes(doc, path+".#").Int()
	if n > 0 {
		last := gjson.GetBytes(doc, path+"."+strconv.FormatInt(n-1, 10))
		if out, ok := insertAfter(doc, last, nil, elem); ok {
			return out, nil
		}
	}
	return sjson.SetRawBytes(doc, path+".-1", elem)
}

// addMember adds key: value to the object at path ("" for the document).
func addMember(doc []byte, path, key string, value []byte) ([]byte, error) {
	obj := gjson.ParseBytes(doc)
	if path != "" {
		obj = gjson.GetBytes(doc, path)
	}
	var lastKey string
	obj.ForEach(func(k, _ gjson.Result) bool { lastKey = k.String(); return true })
	if lastKey != "" {
		lastPath := gjsonKey(lastKey)
		if path != "" {
			lastPath = path + "." + lastPath
		}
		name, _ := json.Marshal(key)
		if out, ok := insertAfter(doc, gjson.GetBytes(doc, lastPath), append(name, ": "...), value); ok {
			return out, nil
		}
	}
	full := gjsonKey(key)
	if path != "" {
		full = path + "." + full
	}
	return sjson.SetRawBytes(doc, full, value)
}

// insertAfter writes ",\n<indent>prefix value" right after last, where
// indent is that of the line last starts on. It declines (ok false) when
// last does not start its own line.
func insertAfter(doc []byte, last gjson.Result, prefix, value []byte) ([]byte, bool) {
	if last.Index <= 0 || last.Index+len(last.Raw) > len(doc) {
		return nil, false
	}
	lineStart := bytes.LastIndexByte(doc[:last.Index], '\n') + 1
	indent := doc[lineStart:last.Index]
	if prefix != nil {
		// An object member: its line holds "key": before the value.
		keyAt := bytes.IndexAny(indent, "\"")
		if keyAt < 0 {
			return nil, false
		}
		indent = indent[:keyAt]
	}
	if len(bytes.Trim(indent, " \t")) > 0 {
		return nil, false // not the first thing on its line: a one-line container
	}
	unit := "  "
	if bytes.HasPrefix(indent, []byte("\t")) {
		unit = "\t"
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, value, string(indent), unit); err != nil {
		return nil, false
	}
	at := last.Index + len(last.Raw)
	out := make([]byte, 0, len(doc)+pretty.Len()+len(indent)+len(prefix)+2)
	out = append(out, doc[:at]...)
	out = append(out, ",\n"...)
	out = append(out, indent...)
	out = append(out, prefix...)
	out = append(out, pretty.Bytes()...)
	return append(out, doc[at:]...), true
}
