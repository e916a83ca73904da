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
	keyBase     = "m/base" // the last event pruned (audit_pruned): the chain goes on from it
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
		t.AfterCommit(func() { t.l.head = h })
		t.AfterApply(t.l.signalAppended) // a publisher reads the events then (EventsAfter)
		return &h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*chainHead), nil
}

// marshaled is a document json.Marshal encoded: an event takes it as it
// is, where encoding/json would scan it again.
type marshaled []byte

// event appends an audit event about subject with the document data.
func (t *tx) event(kind, subject string, data any) error {
	head, err := t.head()
	if err != nil {
		return err
	}
	raw, ok := data.(marshaled)
	if !ok {
		if raw, err = json.Marshal(data); err != nil {
			return &store.Error{Err: fmt.Errorf("encode event: %w", err)}
		}
	}
	e := Event{Seq: head.Seq + 1, Time: t.Now(), Kind: kind, Subject: subject, Data: json.RawMessage(raw), PrevHash: head.Hash}
	e.Hash = e.Sum()
	if err := t.Set(eventKey(e.Seq), e.encodeStored()); err != nil {
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

// readBase is the last event pruned, or the zero chainHead.
func (l *Ledger) readBase() (chainHead, error) {
	var base chainHead
	err := l.read(keyBase, &base)
	if errors.Is(err, ErrNotFound) {
		err = nil
	}
	return base, err
}

// events calls fn with every event of the chain after base, in order, as
// exported (prev_hash filled in), and the seq it is stored under.
func (l *Ledger) events(ctx context.Context, base chainHead, fn func(storedAs uint64, e *Event) error) error {
	prev := base.Hash
	return l.store.Scan(ctx, eventPrefix, eventKey(base.Seq+1), func(key, val []byte) error {
		seq := binary.BigEndian.Uint64(key[len(eventPrefix):])
		e, err := decodeStoredEvent(val, prev)
		if err != nil {
			return &api.ChainError{Seq: seq, Problem: "modified", Detail: "the event is not valid JSON"}
		}
		prev = e.Hash
		return fn(seq, &e)
	})
}

// Verify walks the whole audit chain, from the last event pruned when the
// ledger was pruned, and reports the first broken link (a modified,
// deleted or reordered event, or a cut-off tail) as an *api.ChainError.
func (l *Ledger) Verify(ctx context.Context) (api.VerifyResult, error) {
	head, err := l.readHead()
	if err != nil {
		return api.VerifyResult{}, err
	}
	base, err := l.readBase()
	if err != nil {
		return api.VerifyResult{}, err
	}
	c := ChainCheck{seq: base.Seq, hash: base.Hash, base: base.Seq, baseHash: base.Hash, begun: true} // from the base the ledger records, never from its first event
	err = l.events(ctx, base, func(seq uint64, e *Event) error { return c.Next(seq, e) })
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
// hashed (from the last event pruned, when the ledger was pruned: the
// first line's prev_hash is its hash), and ends with a trailer that
// anchors it: before it writes, it
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
		var base chainHead
		if _, err := t.Get(keyBase, &base); err != nil {
			return api.Exported{}, err
		}
		rec.BaseSeq, rec.BaseHash = base.Seq, base.Hash
		return rec, t.event(KindAuditExported, "audit", rec)
	})
	if err != nil {
		return err
	}
	base, err := l.readBase()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	err = l.events(ctx, base, func(seq uint64, e *Event) error {
		if seq > rec.HeadSeq {
			return errExported
		}
		if _, err := bw.Write(e.encode()); err != nil {
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

// Event returns the audit event with seq, as exported, or ErrNotFound (an
// event pruned is not found).
func (l *Ledger) Event(ctx context.Context, seq uint64) (Event, error) {
	base, err := l.readBase()
	if err != nil {
		return Event{}, err
	}
	if seq <= base.Seq {
		return Event{}, fmt.Errorf("event %d was pruned: %w", seq, ErrNotFound)
	}
	raw, err := l.store.ReadRaw(eventKey(seq))
	if err != nil {
		return Event{}, named("audit event", strconv.FormatUint(seq, 10), err)
	}
	prev := base.Hash
	if seq > base.Seq+1 && !hasPrevHash(raw) {
		before, err := l.store.ReadRaw(eventKey(seq - 1))
		if err != nil {
			return Event{}, err
		}
		prev = gjsonHash(before)
	}
	return decodeStoredEvent(raw, prev)
}
