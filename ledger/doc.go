// Package ledger is toolgate's memory: the durable record of sessions, tool
// calls, approval records, decisions, write-backs and the audit chain, on
// Badger. Only the gate daemon opens it (Badger locks its directory; a
// second process fails), so nothing of Badger crosses this package's API.
//
// Every write goes through one committer goroutine that batches concurrent
// operations into one transaction (group commit); an operation returns only
// after its transaction is durable. Durable means in the ledger's own
// journal, fdatasynced: Badger runs without SyncWrites (two syncs a commit)
// and the journal, applied again at Open, covers what a crash of the
// machine could take from it (see journal.go). After a checkpoint the
// ledger drops Badger's clean mapped pages from its resident memory
// (resident.go). The invariants
// (a tool_use_id is unique, an approval's status moves only from pending to
// approved, denied or expired, an execution is recorded once) are checked
// inside that transaction, so they hold whatever the callers do.
//
// # Key layout
//
// Keys are ASCII prefixes followed by ids; sequence numbers and times are
// 8-byte big-endian so that keys sort in order.
//
//	s/<session_id>                    Session
//	c/<tool_use_id>                   Call
//	cs/<session_id>/<tool_use_id>     index: the calls of a session (empty value)
//	a/<approval_id>                   Approval (the seed's approval record)
//	ac/<tool_use_id>                  index: the approval id of a call
//	ap/<expires_at ns>/<approval_id>  index: pending approvals by expiry (empty value)
//	ah/<approval_id>                  marks a hand-off approval (empty value)
//	d/<approval_id>                   Decision (never overwrites the approval)
//	w/<tool_use_id>                   WriteBack
//	pol/<sha256>                      a policy document, as read
//	e/<seq>                           Event, the append-only audit chain
//	m/head                            the last event's seq and hash
//
// Values are JSON documents whose field names are the wire names of the
// seed's documents. The package must not import the policy engine.
//
// # Files
//
// Badger's own files, and journal-<generation>.wal: the batches made
// durable since the last checkpoint (at most 8 MB, unless one batch is
// larger), reused from one generation to the next.
package ledger
