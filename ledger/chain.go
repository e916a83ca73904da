package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
)

// Event is one entry of the audit chain: every state change of the
// ledger, in order, each carrying the hash of the one before it. An export
// of the chain is one Event a JSON line; it is the audit's document, and
// this file its whole format: how an event is hashed, and how a chain is
// checked (by Verify here, and by VerifyExport, which needs no ledger).
type Event struct {
	Seq      uint64          `json:"seq"`
	Time     time.Time       `json:"time"`
	Kind     string          `json:"kind"`
	Subject  string          `json:"subject"` // the id the event is about
	Data     json.RawMessage `json:"data"`    // the document as written
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Sum is the SHA-256 of the event's canonical encoding: a version line,
// then seq, time, kind, subject, data and the previous hash, each
// length-prefixed, so that no two different events encode alike. An
// event's Hash is its Sum.
func (e *Event) Sum() string {
	h := sha256.New()
	io.WriteString(h, "toolgate-audit-v1\n")
	var n [binary.MaxVarintLen64]byte
	field := func(b []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], e.Seq)
	field(seq[:])
	field([]byte(e.Time.UTC().Format(time.RFC3339Nano)))
	field([]byte(e.Kind))
	field([]byte(e.Subject))
	field(e.Data)
	field([]byte(e.PrevHash))
	return hex.EncodeToString(h.Sum(nil))
}

// encodeStored is the event as the ledger stores it: as exported, without
// prev_hash, which is the hash of the event before it (Verify and Export
// fill it in). Events stored before 2026-12-02 carry it.
func (e *Event) encodeStored() []byte { return e.encodeWith(false) }

// decodeStoredEvent reads a stored event; prev is the hash of the event
// before it, its prev_hash when it was stored without one.
func decodeStoredEvent(raw []byte, prev string) (Event, error) {
	var s struct {
		Event
		PrevHash *string `json:"prev_hash"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Event{}, err
	}
	e := s.Event
	e.PrevHash = prev
	if s.PrevHash != nil {
		e.PrevHash = *s.PrevHash
	}
	return e, nil
}

// hasPrevHash reports whether a stored event carries its prev_hash.
func hasPrevHash(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"prev_hash":`)) && gjson.GetBytes(raw, "prev_hash").Exists()
}

// gjsonHash is the hash of a stored event.
func gjsonHash(raw []byte) string { return gjson.GetBytes(raw, "hash").Str }

// encode is the event as json.Marshal writes it, with Data as it is: it
// must be what json.Marshal wrote (compact, HTML characters escaped), which
// encoding/json would scan again.
func (e *Event) encode() []byte { return e.encodeWith(true) }

// encodeWith is the event as encode writes it, without prev_hash unless
// prevHash.
func (e *Event) encodeWith(prevHash bool) []byte {
	b := make([]byte, 0, len(e.Data)+256)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	t, _ := e.Time.MarshalJSON()
	b = append(b, t...)
	b = append(b, `,"kind":`...)
	b = appendString(b, e.Kind)
	b = append(b, `,"subject":`...)
	b = appendString(b, e.Subject)
	b = append(b, `,"data":`...)
	b = append(b, e.Data...)
	if prevHash {
		b = append(b, `,"prev_hash":`...)
		b = appendString(b, e.PrevHash)
	}
	b = append(b, `,"hash":`...)
	b = appendString(b, e.Hash)
	return append(b, '}')
}

// appendString appends s as a JSON string, as json.Marshal writes it: as
// it is between quotes when it holds nothing json.Marshal escapes (kinds,
// ids and hashes never do), through json.Marshal otherwise.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ChainCheck checks the events of a chain one by one, in order, from the
// first; its zero value is ready. A chain that was pruned starts after
// the last event pruned: its first event's prev_hash is that event's hash
// (an export says so in its trailer, which CheckExport compares).
type ChainCheck struct {
	seq      uint64
	hash     string
	base     uint64 // the seq of the last event pruned
	baseHash string
	begun    bool
}

// Next checks the next event. storedAs is the seq the event was stored
// under (0 when unknown, as in an export).
func (c *ChainCheck) Next(storedAs uint64, e *Event) error {
	if !c.begun && c.seq == 0 && e.Seq > 1 {
		// An export of a pruned chain: it starts after the last event
		// pruned, whose hash its first event names.
		c.seq, c.hash, c.base, c.baseHash = e.Seq-1, e.PrevHash, e.Seq-1, e.PrevHash
	}
	c.begun = true
	want := c.seq + 1
	switch {
	case storedAs != 0 && storedAs != e.Seq:
		return &api.ChainError{Seq: storedAs, Problem: "out_of_order", Detail: fmt.Sprintf("the event stored as %d says it is %d", storedAs, e.Seq)}
	case e.Seq > want:
		return &api.ChainError{Seq: want, Problem: "missing", Detail: fmt.Sprintf("events %d to %d are missing", want, e.Seq-1)}
	case e.Seq < want:
		return &api.ChainError{Seq: e.Seq, Problem: "out_of_order", Detail: fmt.Sprintf("event %d comes after %d", e.Seq, c.seq)}
	case e.PrevHash != c.hash:
		return &api.ChainError{Seq: e.Seq, Problem: "broken_link", Detail: "its prev_hash is not the hash of the event before it"}
	case e.Sum() != e.Hash:
		return &api.ChainError{Seq: e.Seq, Problem: "modified", Detail: "its content does not match its hash"}
	}
	c.seq, c.hash = e.Seq, e.Hash
	return nil
}

// Last is the seq and hash of the last event checked.
func (c *ChainCheck) Last() (seq uint64, hash string) { return c.seq, c.hash }

// Result is the result of a chain that checked out.
func (c *ChainCheck) Result() api.VerifyResult {
	r := api.VerifyResult{Valid: true, Events: c.seq - c.base, Head: c.hash, HeadSeq: c.seq}
	if c.base > 0 {
		r.Base, r.BaseHash = c.base, c.baseHash
	}
	return r
}

// VerifyExport checks an exported chain read from r: the first broken
// link comes back as a *api.ChainError. It also returns the export's
// trailer (nil without one: a file cut short, or made before exports were
// anchored), which the ledger's own record of the export must match: that
// is the caller's to check (CheckExport).
func VerifyExport(r io.Reader) (api.VerifyResult, *api.Exported, error) {
	var c ChainCheck
	var trailer *api.Exported
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if trailer != nil {
			return api.VerifyResult{}, nil, &api.ChainError{Seq: c.seq + 1, Problem: "modified", Detail: "lines follow the export's last line"}
		}
		if t, ok := exportTrailer(sc.Bytes()); ok {
			trailer = t
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return api.VerifyResult{}, nil, &api.ChainError{Seq: c.seq + 1, Problem: "modified", Detail: "a line is not valid JSON"}
		}
		if err := c.Next(0, &e); err != nil {
			return api.VerifyResult{}, nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return api.VerifyResult{}, nil, err
	}
	res := c.Result()
	if trailer != nil && trailer.BaseSeq != res.Base {
		return api.VerifyResult{}, nil, &api.ChainError{Seq: trailer.BaseSeq + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the export says it starts after event %d; the file starts after event %d", trailer.BaseSeq, res.Base)}
	}
	return res, trailer, nil
}

// exportTrailer reads an export's last line.
func exportTrailer(line []byte) (*api.Exported, bool) {
	var t struct {
		Export *api.Exported `json:"export"`
	}
	if json.Unmarshal(line, &t) != nil || t.Export == nil {
		return nil, false
	}
	return t.Export, true
}

// CheckExport checks a verified export (res, its trailer) against the
// ledger's record of that export (the audit_exported event the trailer
// names): the file must hold exactly the events exported then, ending
// with the head recorded then. A file whose tail was cut, or whose chain
// was rewritten and hashed again, does not.
func CheckExport(res api.VerifyResult, trailer *api.Exported, recorded Event) error {
	if trailer == nil {
		return &api.ChainError{Seq: res.HeadSeq + 1, Problem: "unanchored",
			Detail: "the export has no last line naming its export: it was cut short, or made before exports were anchored"}
	}
	var rec api.Exported
	if recorded.Kind != KindAuditExported || json.Unmarshal(recorded.Data, &rec) != nil || rec.Event != recorded.Seq {
		return &api.ChainError{Seq: trailer.Event, Problem: "unanchored",
			Detail: fmt.Sprintf("the ledger has no export at event %d", trailer.Event)}
	}
	switch {
	case res.Base != rec.BaseSeq:
		return &api.ChainError{Seq: rec.BaseSeq + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the ledger's export at event %d starts after event %d; the file after event %d", rec.Event, rec.BaseSeq, res.Base)}
	case res.HeadSeq != rec.HeadSeq:
		return &api.ChainError{Seq: min(res.HeadSeq, rec.HeadSeq) + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the ledger's export at event %d holds events %d to %d; the file ends at %d", rec.Event, rec.BaseSeq+1, rec.HeadSeq, res.HeadSeq)}
	case res.Head != rec.HeadHash:
		return &api.ChainError{Seq: res.HeadSeq, Problem: "rewritten",
			Detail: fmt.Sprintf("the file's chain does not end in the hash the ledger recorded when it exported it (event %d)", rec.Event)}
	}
	return nil
}
