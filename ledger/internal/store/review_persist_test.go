package store

import (
	"fmt"
	"os"
	"testing"
)

// A batch that cannot be made durable stops the store, whatever failed
// (here its checkpoint: the journal cannot be renamed to its next
// generation), not only a failed fdatasync: a later batch was built on
// it (AfterCommit, as the ledger remembers its audit chain's head there)
// and must not be acknowledged without it.
func TestAFailedCheckpointStopsTheStore(t *testing.T) {
	s, dir := openTest(t)
	head := 0 // the committer's memory of the last link, as ledger's chain head
	link := func(tx *Tx) (int, error) {
		n := head + 1
		if err := tx.Put(fmt.Sprintf("c/%06d", n), n-1); err != nil {
			return 0, err
		}
		tx.AfterCommit(func() { head = n })
		return n, nil
	}
	if _, err := Write(ctx, s, link); err != nil {
		t.Fatal(err)
	}
	// The next batch checkpoints, and the journal cannot take its next
	// generation's name.
	s.leading.Lock()
	s.overlay.drained()
	s.sinceCheckpoint = journalSize
	block := journalPath(dir, s.journal.gen+1)
	s.leading.Unlock()
	if err := os.Mkdir(block, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, s, link); err == nil {
		t.Fatal("a batch whose checkpoint failed was acknowledged")
	} else {
		t.Logf("the failed batch: %v", err)
	}
	os.Remove(block) // the failure was transient
	n, err := Write(ctx, s, link)
	if err == nil {
		var prev int
		rerr := s.Read(fmt.Sprintf("c/%06d", n-1), &prev)
		t.Errorf("after a batch that could not be made durable, a later one built on it was acknowledged: link %d (the link before it: %v)", n, rerr)
	}
}
