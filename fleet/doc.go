// Package fleet is toolgate's fleet mode: many hosts, one approval queue
// and one audit, on PostgreSQL (github.com/jackc/pgx/v5). It owns the
// schema and its migrations (migrations/, applied by Init), the roles
// (AddRole), a host's link to the fleet (Node: the outbox publisher and the
// decision listener) and a person's (Approver: the pending asks of every
// host, decisions through the arbiter). Only the daemon runs a Node; the
// CLI and toolgate web use an Approver. It must not import the daemon.
//
// # Where authority lives
//
//   - Each host's ledger is the authority for what runs on it: every call
//     is decided and recorded there, durable, before the hook or the prompt
//     tool is answered, and once-per-tool_use_id is enforced there. Nothing
//     on that path talks to Postgres.
//   - The audit chain is the outbox. Every change is an event of the
//     ledger's hash chain, durable and in order; the publisher copies the
//     events Postgres lacks, in order, in batches, each batch one
//     transaction, idempotent by (host, seq); with an ask's creation it
//     inserts the ask, with an ask's decision or expiry it reports the
//     host's outcome (toolgate.settle). It retries with backoff while
//     Postgres is away, and on reconnecting starts after the last event
//     Postgres holds without a gap.
//   - Postgres arbitrates decisions. toolgate.decide (SECURITY DEFINER,
//     executable by toolgate_approver only) is one
//     UPDATE ... WHERE status = 'pending' AND expires_at > now(); the
//     decision is its own row, unique per ask, with session_user and the
//     client address as the actor; pg_notify tells the host, whose listener
//     applies it through the daemon's own path (ledger.Arbitrated) after
//     checking that the ask Postgres holds is the ask it recorded. A host in
//     a fleet refuses decisions on its own socket: toolgate approve goes
//     through Postgres too (--fleet).
//   - Expiry: at an ask's expires_at on its own clock, a host asks Postgres
//     first (toolgate.expire): a decision made in time is applied; else
//     Postgres marks it expired and the host denies it approval_expired.
//   - Postgres unreachable: calls are still decided and recorded; asks wait
//     and expire on the host's clock (a deny, never an allow); publishing
//     resumes when Postgres is back. Meanwhile an approver can decide only
//     asks already published (their decisions reach the host when it
//     reconnects, if before its expiry); asks made during the outage are not
//     seen until then. A decision Postgres accepts for an ask the host had
//     already expired while cut off is not applied: the host's outcome
//     (approvals.outcome) says what happened, and the audit shows both.
//
// # Least privilege, enforced by Postgres
//
// toolgate_agent (a host; its login role's name is the host's name) may
// insert its own asks and events and read its own asks and their
// decisions, under row-level security on session_user; it has no UPDATE or
// DELETE on anything and cannot execute toolgate.decide. Its only writes to
// an ask's status go through toolgate.expire and toolgate.settle, which can
// make its own pending ask expired (a deny it could give itself anyway).
// toolgate_approver reads everything and decides only through
// toolgate.decide. toolgate_auditor reads everything. A model that reads
// its host's credentials can write rows in its host's name (and the
// publisher logs an event that differs from the ledger's), but cannot
// decide, and a decision on an ask it forged is not applied to the real one.
package fleet
