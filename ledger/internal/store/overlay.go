package store

import (
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// A batch is staged once its operations ran: the second and third stages
// of the committer have yet to make it durable and apply it to Badger.
// The batches built meanwhile read its changes from the overlay, newest
// first, above a Badger transaction opened once every batch they do not
// see there was applied.

// stagedBatch is a staged batch: its changes (raw values), by key, and the
// operations to acknowledge once it is durable.
type stagedBatch struct {
	seq     uint64
	changes []change
	vals    map[string]change
	ops     []*op

	err       error    // why it could not be made durable
	encoded   []change // its changes as stored
	onApplied []func() // Tx.AfterApply
}

// overlay holds the staged batches not yet applied, in order.
type overlay struct {
	mu      sync.Mutex
	next    uint64 // the seq of the next staged batch
	acks    uint64 // every batch up to this seq was acknowledged (or failed)
	last    uint64 // every batch up to this seq is in Badger (or failed)
	pending []*stagedBatch
	caught  *sync.Cond // signalled when last moves
}

// push stages a batch.
func (o *overlay) push(changes []change, ops []*op) *stagedBatch {
	b := &stagedBatch{changes: changes, vals: make(map[string]change, len(changes)), ops: ops}
	for _, c := range changes {
		b.vals[string(c.key)] = c
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	b.seq = o.next
	o.pending = append(o.pending, b)
	return b
}

// acked records that a batch was acknowledged (or failed).
func (o *overlay) acked(b *stagedBatch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acks = b.seq
}

// applied records that a batch is in Badger (or failed: the store stopped).
func (o *overlay) applied(b *stagedBatch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = b.seq
	if o.caught != nil {
		o.caught.Broadcast()
	}
}

// readable waits until Badger holds every batch acknowledged so far: what
// a caller was told is written, it then reads.
func (o *overlay) readable() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.caught == nil {
		o.caught = sync.NewCond(&o.mu)
	}
	for want := o.acks; o.last < want; {
		o.caught.Wait()
	}
}

// drained waits until every batch staged so far is in Badger (or
// failed): with the first stage held, the second is idle then.
func (o *overlay) drained() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.caught == nil {
		o.caught = sync.NewCond(&o.mu)
	}
	for want := o.next; o.last < want; {
		o.caught.Wait()
	}
}

// view is what the next batch reads: the staged batches a transaction
// opened now may not see, and that transaction. A batch applied after the
// transaction was opened stays in the view: the overlay gives the same
// values as Badger then.
func (o *overlay) view(db *badger.DB) ([]*stagedBatch, *badger.Txn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.pending) && o.pending[n].seq <= o.last {
		o.pending[n] = nil // its changes are garbage now
		n++
	}
	o.pending = o.pending[n:]
	return append([]*stagedBatch(nil), o.pending...), db.NewTransaction(true)
}
