// Package ledger is toolgate's memory: the durable record of sessions, tool
// calls, approval records, decisions, write-backs and the audit chain. It
// stores the documents of package api as they are (api.Call with its
// Verdict, api.Approval, api.Decision, api.WriteBack, api.Session). Only
// the gate daemon opens it (the store locks its directory; a second
// process fails), so nothing of the store crosses this package's API.
//
// Every operation is one function of a transaction of ledger/internal/store
// (Badger, a journal that makes each batch durable with one fdatasync, and
// one committer that batches concurrent operations); it returns only after
// its batch is durable. The ledger takes decisions as they were made: it
// never calls back into the policy. The invariants (a tool_use_id is
// unique, a terminal verdict never changes, an approval's status moves only
// from pending to approved, denied or expired, an execution is recorded
// once) are checked inside that transaction, so they hold whatever the
// callers do, and every change appends an event to the audit chain in the
// same transaction.
//
// # Key layout
//
// Keys are ASCII prefixes followed by ids; sequence numbers and times are
// 8-byte big-endian so that keys sort in order.
//
//	s/<session_id>                    Session
//	c/<tool_use_id>                   Call
//	cs/<session_id>/<tool_use_id>     index: the calls of a session (empty value)
//	a/<approval_id>                   Approval (the approval flow's record)
//	ac/<tool_use_id>                  index: the approval id of a call
//	ap/<expires_at ns>/<approval_id>  index: pending approvals by expiry (empty value)
//	ah/<approval_id>                  marks a hand-off approval (empty value)
//	d/<approval_id>                   Decision (never overwrites the approval)
//	w/<tool_use_id>                   WriteBack
//	pol/<sha256>                      a policy document, as read
//	e/<seq>                           Event, the append-only audit chain
//	m/head                            the last event's seq and hash
//	m/base                            the last event pruned (seq and hash), once pruned
//
// Values are JSON documents whose field names are the wire names of the
// approval flow's documents; the store keeps those of 192 bytes or more
// compressed (S2) when that is smaller, and an event is stored without its prev_hash,
// which is the hash of the event before it (or m/base's), filled in again
// when it is read. The package must not import the policy engine.
//
// Prune removes the events recorded before a date and the sessions that
// ended before it (not those deferred), with their calls; the chain goes
// on from m/base, and the prune is an event of it. In a fleet the chain is
// also the outbox: a prune keeps every event Postgres lacks.
//
// History streams the recorded calls of a time window with what the gate
// knew of their sessions, for a replay through other policies; ReadHistory
// reads the same from an export, without a ledger.
package ledger
