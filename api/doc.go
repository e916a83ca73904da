// Package api is toolgate's one vocabulary, and the protocol between its
// daemon (toolgate serve) and everything that talks to it: the hook
// binary, toolgate run, the prompt tool and the CLI.
//
// It holds the words every package shares: effects, reason codes, sources,
// approval statuses and Claude Code's hook event names (vocab.go); the
// documents a tool call becomes, which the ledger stores as they are and
// the CLI prints (documents.go: Call and its Verdict, and the approval flow's
// approval record, decision and write-back, whose JSON Schemas schema.go
// embeds with the permission result's); the model's deny message
// (message.go); and the wire types, routes and protocol version. It holds
// types and the functions of their values only: the one client of this
// protocol is package client, the files and directories the daemon and its
// clients meet at are package paths, and the spool file is package spool.
//
// It is the leaf of the house: it imports the standard library only, so
// that every package, the hook binary's among them, may import it.
//
// # Transport
//
// HTTP/1.1 over a Unix socket (gate.sock, in $XDG_RUNTIME_DIR/toolgate).
// The socket's directory is 0700 and the socket 0600; the daemon reads the
// caller's uid and pid with SO_PEERCRED and refuses other uids and any
// request that carries an Origin or Referer header (a browser). The daemon
// records its runtime directory beside its ledger (daemon.json), and
// clients go there whatever their own environment names
// (paths.Paths.Live): a cron job and a desktop session reach the same
// daemon.
//
// Every request and response carries the header Toolgate-Protocol with
// ProtocolVersion; a request with another version is refused with code
// "protocol_mismatch". Errors are {"error": "...", "code": "..."} with an
// HTTP status that fits.
//
// # Routes
//
//	GET  /v1/status                  StatusResponse
//	POST /v1/sessions                RegisterRequest -> Session
//	GET  /v1/sessions/{id}           Session
//	POST /v1/sessions/{id}/end       -> EndedSession (ended "deferred" when it defers a call)
//	POST /v1/sessions/{id}/resume    ResumeRequest -> Session: a deferred session, taken up
//	                                 again by the caller, once (409 otherwise)
//	GET  /v1/deferred                DeferredResponse: the sessions waiting on a person
//	GET  /v1/sessions/{id}/calls     CallsResponse
//	GET  /v1/calls                   CallsResponse (?session=ID to filter)
//	POST /v1/hook                    HookRequest -> HookResponse
//	POST /v1/prompt                  PromptRequest -> Verdict (an ask carries approval_id)
//	POST /v1/approvals/{id}/wait     -> Verdict, once a person decided or it expired
//	POST /v1/sessions/{id}/claude    ClaudePIDRequest
//	POST /v1/sessions/{id}/outcomes  OutcomesRequest -> OutcomesResponse: which
//	                                 calls ran, what the model saw (the session's
//	                                 owner only)
//
// A hook event of a session that toolgate install's hook reports
// (HookRequest.Installed) registers that session on first sight, under
// Claude Code's own session_id and with the named policy. Its
// PermissionRequest event is held until a person decides the approval it
// creates, or until the approval's deadline, when the verdict is an ask
// with reason_code handed_to_claude: the hook answers nothing and Claude
// Code's own dialog decides. SessionEnd ends the session.
//
// The approver socket (approve.sock) serves people and their tools; a
// decision from the gated claude or any process descending from it (or
// from its supervisor) is refused with 403 "self_approval", and a daemon
// in a fleet (package fleet) refuses every decision with 409 "fleet":
// its fleet's PostgreSQL arbitrates them (StatusResponse.Fleet says so):
//
//	GET  /v1/approvals               ApprovalsResponse (pending)
//	GET  /v1/approvals/{id}          ApprovalDetail
//	POST /v1/approvals/{id}/decide   DecideRequest -> ApprovalDetail
//	GET  /v1/watch                   WatchEvent lines: a snapshot, then changes
//	GET  /v1/audit/verify            VerifyResult of the whole audit chain
//	GET  /v1/audit/export            the audit chain, one event a JSON line, then
//	                                 {"export": Exported}; the export is recorded first
//	GET  /v1/audit/events/{seq}      one event of the chain, as exported
//	POST /v1/audit/prune             PruneRequest -> Pruned: remove what is older
//	                                 than a date (refused from a gated session)
//	GET  /v1/history                 HistoryItem lines: the calls proposed in
//	                                 [?since, ?until) (RFC 3339), each after its
//	                                 session, for toolgate policy diff --history
package api

// ProtocolVersion is the version of this protocol. History:
//
//   - 1: 2026-11-29: sessions, hook events, the permission prompt, calls,
//     approvals and the approver socket.
//   - 2: 2026-12-01: hook requests from hooks installed in Claude Code's
//     settings (HookRequest.Installed), and the PermissionRequest and
//     SessionEnd events.
//   - 3: 2026-12-01: one Verdict from the hook's answer to the audit: it
//     carries actor and decided_at, and the input to run travels as
//     updated_input; calls embed their verdict; GET /v1/audit/verify and
//     GET /v1/audit/export on approve.sock.
//   - 4: 2026-12-01: the approval flow's documents exactly: a Decision's
//     decision is the effect it gives the call (allow, deny; ask when
//     handed to Claude Code's dialog), no longer the record's status; a WriteBack always
//     carries rule_id and reason_code, null when there are none.
//     GET /v1/history on approve.sock: the recorded calls of a time window
//     with what the gate knew of their sessions, streamed for a replay.
//   - 5: 2026-12-01: DecideRequest.ViaPID: the notification server a
//     click came through, refused as an approver would be; ending a
//     session answers an EndedSession, with the audit chain's head.
//     RegisterRequest.Policy is the file's bytes, base64 (its sha256 is the
//     file's); RegisterRequest.ClaudeArgs, HookResponse.Defer, ResumeRequest and
//     GET /v1/deferred: toolgate run --on-ask defer and toolgate resume.
//   - 6: 2026-12-02: POST /v1/sessions/{id}/outcomes: toolgate run reports
//     which calls ran and what the model saw, read from Claude Code's
//     transcript, in place of the PostToolUse and PostToolBatch events.
//     POST /v1/audit/prune on approve.sock; a verify or export of a
//     pruned chain starts after its base (VerifyResult.Base,
//     Exported.BaseSeq).
const ProtocolVersion = 6

// HeaderProtocol carries ProtocolVersion on every request and response.
const HeaderProtocol = "Toolgate-Protocol"

// Routes, as Go 1.22 mux patterns.
const (
	RouteStatus       = "GET /v1/status"
	RouteRegister     = "POST /v1/sessions"
	RouteSession      = "GET /v1/sessions/{id}"
	RouteEndSession   = "POST /v1/sessions/{id}/end"
	RouteResume       = "POST /v1/sessions/{id}/resume"
	RouteDeferred     = "GET /v1/deferred"
	RouteSessionCalls = "GET /v1/sessions/{id}/calls"
	RouteCalls        = "GET /v1/calls"
	RouteHook         = "POST /v1/hook"
	RoutePrompt       = "POST /v1/prompt"
	RouteOutcomes     = "POST /v1/sessions/{id}/outcomes"
)
