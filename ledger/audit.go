package ledger

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger/internal/store"
)

const (
	keyHead     = "m/head"
	eventPrefix = "e/"
)

// chainHead is the last event of the audit chain.
type chainHead struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

func eventKey(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return eventPrefix + string(b[:])
}

// event appends an audit event about subject with the document data.
func (t *tx) event(kind, subject string, data any) error {
	if t.head == nil {
		t.head = &chainHead{}
		if _, err := t.Get(keyHead, t.head); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return &store.Error{Err: fmt.Errorf("encode event: %w", err)}
	}
	e := Event{Seq: t.head.Seq + 1, Time: t.Now(), Kind: kind, Subject: subject, Data: raw, PrevHash: t.head.Hash}
	e.Hash = e.computeHash()
	if err := t.Put(eventKey(e.Seq), e); err != nil {
		return err
	}
	*t.head = chainHead{Seq: e.Seq, Hash: e.Hash}
	return nil
}

// computeHash is the SHA-256 of the event's canonical encoding: a version
// line, then seq, time, kind, subject, data and the previous hash, each
// length-prefixed, so that no two different events encode alike.
func (e *Event) computeHash() string {
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

func (l *Ledger) readHead() (chainHead, error) {
	var head chainHead
	err := l.read(keyHead, &head)
	if errors.Is(err, ErrNotFound) {
		err = nil // an empty ledger
	}
	return head, err
}

// chainChecker checks events one by one, in order.
type chainChecker struct {
	prev chainHead
}

func (c *chainChecker) check(keySeq uint64, e *Event) error {
	want := c.prev.Seq + 1
	switch {
	case keySeq != 0 && keySeq != e.Seq:
		return &api.ChainError{Seq: keySeq, Problem: "out_of_order", Detail: fmt.Sprintf("the event stored as %d says it is %d", keySeq, e.Seq)}
	case e.Seq > want:
		return &api.ChainError{Seq: want, Problem: "missing", Detail: fmt.Sprintf("events %d to %d are missing", want, e.Seq-1)}
	case e.Seq < want:
		return &api.ChainError{Seq: e.Seq, Problem: "out_of_order", Detail: fmt.Sprintf("event %d comes after %d", e.Seq, c.prev.Seq)}
	case e.PrevHash != c.prev.Hash:
		return &api.ChainError{Seq: e.Seq, Problem: "broken_link", Detail: "its prev_hash is not the hash of the event before it"}
	case e.computeHash() != e.Hash:
		return &api.ChainError{Seq: e.Seq, Problem: "modified", Detail: "its content does not match its hash"}
	}
	c.prev = chainHead{e.Seq, e.Hash}
	return nil
}

// Verify walks the whole audit chain and reports the first broken link
// (a modified, deleted or reordered event, or a cut-off tail) as an
// *api.ChainError.
func (l *Ledger) Verify(ctx context.Context) (api.VerifyResult, error) {
	var c chainChecker
	head, err := l.readHead()
	if err != nil {
		return api.VerifyResult{}, err
	}
	err = l.store.Scan(ctx, eventPrefix, eventPrefix, func(key, val []byte) error {
		var e Event
		if err := json.Unmarshal(val, &e); err != nil {
			seq := binary.BigEndian.Uint64(key[len(eventPrefix):])
			return &api.ChainError{Seq: seq, Problem: "modified", Detail: "the event is not valid JSON"}
		}
		return c.check(binary.BigEndian.Uint64(key[len(eventPrefix):]), &e)
	})
	if err != nil {
		return api.VerifyResult{}, err
	}
	if c.prev != head {
		return api.VerifyResult{}, &api.ChainError{Seq: c.prev.Seq + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the chain ends at event %d but the ledger's head is event %d", c.prev.Seq, head.Seq)}
	}
	return api.VerifyResult{Valid: true, Events: c.prev.Seq, Head: c.prev.Hash}, nil
}

// Export writes the audit chain as JSON lines, one event a line, exactly as
// stored; VerifyExport checks such a file.
func (l *Ledger) Export(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	err := l.store.Scan(ctx, eventPrefix, eventPrefix, func(_, val []byte) error {
		if _, err := bw.Write(val); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// VerifyExport checks an exported chain read from r.
func VerifyExport(r io.Reader) (api.VerifyResult, error) {
	var c chainChecker
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return api.VerifyResult{}, &api.ChainError{Seq: c.prev.Seq + 1, Problem: "modified", Detail: "a line is not valid JSON"}
		}
		if err := c.check(0, &e); err != nil {
			return api.VerifyResult{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return api.VerifyResult{}, err
	}
	return api.VerifyResult{Valid: true, Events: c.prev.Seq, Head: c.prev.Hash}, nil
}
