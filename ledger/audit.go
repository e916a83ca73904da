package ledger

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

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

// head is the audit chain's head as the batch has it: the committed head
// at the batch's first event, advanced by each event, written once before
// the batch commits and remembered once it has.
func (t *tx) head() (*chainHead, error) {
	v, err := t.Memo(keyHead, func() (any, error) {
		h := t.l.head
		t.BeforeCommit(func(st *store.Tx) error { return st.Put(keyHead, &h) })
		t.AfterCommit(func() { t.l.head = h; t.l.signalAppended() })
		return &h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*chainHead), nil
}

// event appends an audit event about subject with the document data.
func (t *tx) event(kind, subject string, data any) error {
	head, err := t.head()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return &store.Error{Err: fmt.Errorf("encode event: %w", err)}
	}
	e := Event{Seq: head.Seq + 1, Time: t.Now(), Kind: kind, Subject: subject, Data: raw, PrevHash: head.Hash}
	e.Hash = e.Sum()
	if err := t.Put(eventKey(e.Seq), e); err != nil {
		return err
	}
	*head = chainHead{Seq: e.Seq, Hash: e.Hash}
	return nil
}

// Head is the audit chain's head as committed.
func (l *Ledger) Head() (api.ChainHead, error) {
	h, err := l.readHead()
	return api.ChainHead{Seq: h.Seq, Hash: h.Hash}, err
}

func (l *Ledger) readHead() (chainHead, error) {
	var head chainHead
	err := l.read(keyHead, &head)
	if errors.Is(err, ErrNotFound) {
		err = nil // an empty ledger
	}
	return head, err
}

// Verify walks the whole audit chain and reports the first broken link
// (a modified, deleted or reordered event, or a cut-off tail) as an
// *api.ChainError.
func (l *Ledger) Verify(ctx context.Context) (api.VerifyResult, error) {
	var c ChainCheck
	head, err := l.readHead()
	if err != nil {
		return api.VerifyResult{}, err
	}
	err = l.store.Scan(ctx, eventPrefix, eventPrefix, func(key, val []byte) error {
		seq := binary.BigEndian.Uint64(key[len(eventPrefix):])
		var e Event
		if err := json.Unmarshal(val, &e); err != nil {
			return &api.ChainError{Seq: seq, Problem: "modified", Detail: "the event is not valid JSON"}
		}
		return c.Next(seq, &e)
	})
	if err != nil {
		return api.VerifyResult{}, err
	}
	if seq, hash := c.Last(); seq != head.Seq || hash != head.Hash {
		return api.VerifyResult{}, &api.ChainError{Seq: seq + 1, Problem: "truncated",
			Detail: fmt.Sprintf("the chain ends at event %d but the ledger's head is event %d", seq, head.Seq)}
	}
	return c.Result(), nil
}

// Export writes the audit chain as JSON lines, one event a line, exactly as
// stored, and ends with a trailer that anchors it: before it writes, it
// records the export in the chain (an audit_exported event naming the
// head it exports), and the trailer repeats that record. VerifyExport
// checks a file's chain; the ledger's record of the export (Event) tells
// whether the file was cut short or rewritten since.
func (l *Ledger) Export(ctx context.Context, w io.Writer, by api.Incident) error {
	rec, err := write(ctx, l, func(t *tx) (api.Exported, error) {
		head, err := t.head()
		if err != nil {
			return api.Exported{}, err
		}
		rec := api.Exported{HeadSeq: head.Seq, HeadHash: head.Hash, ExportedAt: t.Now(), ByPID: by.PID, ByExe: by.Exe}
		rec.Event = head.Seq + 1
		return rec, t.event(KindAuditExported, "audit", rec)
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	err = l.store.Scan(ctx, eventPrefix, eventPrefix, func(key, val []byte) error {
		if binary.BigEndian.Uint64(key[len(eventPrefix):]) > rec.HeadSeq {
			return errExported
		}
		if _, err := bw.Write(val); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err != nil && !errors.Is(err, errExported) {
		return err
	}
	trailer, _ := json.Marshal(api.ExportTrailer{Export: rec})
	bw.Write(append(trailer, '\n'))
	return bw.Flush()
}

var errExported = errors.New("exported")

// Event returns the audit event with seq, or ErrNotFound.
func (l *Ledger) Event(ctx context.Context, seq uint64) (Event, error) {
	var e Event
	return e, named("audit event", strconv.FormatUint(seq, 10), l.read(eventKey(seq), &e))
}
