package ledger

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

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

// ChainCheck checks the events of a chain one by one, in order, from the
// first; its zero value is ready.
type ChainCheck struct {
	seq  uint64
	hash string
}

// Next checks the next event. storedAs is the seq the event was stored
// under (0 when unknown, as in an export).
func (c *ChainCheck) Next(storedAs uint64, e *Event) error {
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
	return api.VerifyResult{Valid: true, Events: c.seq, Head: c.hash}
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
	return c.Result(), trailer, nil
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
		return &api.ChainError{Seq: res.Events + 1, Problem: "unanchored",
			Detail: "the export has no last line naming its export: it was cut short, or made before exports were anchored"}
	}
	var rec api.Exported
	if recorded.Kind != KindAuditExported || json.Unmarshal(recorded.Data, &rec) != nil || rec.Event != recorded.Seq {
		return &api.ChainError{Seq: trailer.Event, Problem: "unanchored",
			Detail: fmt.Sprintf("the ledger has no export at event %d", trailer.Event)}
	}
	switch {
	case res.Events != rec.HeadSeq:
		return &api.ChainError{Seq: min(res.Events, rec.HeadSeq) + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the ledger's export at event %d holds events 1 to %d; the file ends at %d", rec.Event, rec.HeadSeq, res.Events)}
	case res.Head != rec.HeadHash:
		return &api.ChainError{Seq: res.Events, Problem: "rewritten",
			Detail: fmt.Sprintf("the file's chain does not end in the hash the ledger recorded when it exported it (event %d)", rec.Event)}
	}
	return nil
}
