package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/spool"
)

// ingestSpools ingests every session's spool file, at start: a file is
// removed once its session is over (ended, or its supervisor gone).
func (d *Daemon) ingestSpools(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(d.cfg.Paths.SpoolDir(), "*.jsonl"))
	for _, file := range files {
		session := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		rec, err := d.ledger.Session(ctx, session)
		if err != nil {
			continue // not a session of this ledger
		}
		var settings sessionSettings
		json.Unmarshal(rec.Settings, &settings)
		over := rec.EndedAt != nil || !settings.alive(rec)
		d.ingestSpool(ctx, session, over)
	}
}

// ingestSpool puts the calls the hook had to deny while the daemon was
// unreachable (the session's spool file) into the ledger, each with its
// deny gate_unavailable, so that the audit misses none of them, and
// removes the file when asked. It is idempotent: a call already recorded
// is left as it is.
func (d *Daemon) ingestSpool(ctx context.Context, session string, remove bool) {
	file := d.cfg.Paths.SpoolFile(session)
	lines, err := spool.Read(file)
	if err != nil {
		d.log.Error("read a spool file", "file", file, "err", err)
		return
	}
	n := 0
	for _, line := range lines {
		switch line.Event {
		case api.PostToolUse, api.PostToolUseFailure:
			// It ran while the daemon was away: record that, once (the
			// file is read again at every start until the session ends).
			if c, err := d.ledger.Call(ctx, line.ToolUseID); err == nil && c.Executions == 0 {
				if _, err := d.ledger.RecordExecution(ctx, line.ToolUseID, ledger.Execution{
					Failed: line.Event == api.PostToolUseFailure, Outcome: "recorded from the spool"}); err == nil {
					n++
				}
			}
		case api.PreToolUse:
			if line.ToolName == "" {
				continue
			}
			input := line.Input
			if len(input) == 0 {
				input = json.RawMessage(`{}`) // too large to spool: the audit keeps the call without it
			}
			c := api.Call{ToolUseID: line.ToolUseID, SessionID: session, AgentID: line.AgentID, ToolName: line.ToolName, Input: input}
			// run denies some calls itself, for the guard (a skill the
			// session made); every other deny in a spool is the gate's
			// being away.
			reason := api.ReasonGateUnavailable
			if line.ReasonCode == api.ReasonToolgateGuard {
				reason = line.ReasonCode
			}
			if _, fresh, err := d.ledger.Record(ctx, c, api.Deny(reason, api.SourceGate), true); err == nil && fresh {
				n++
			}
		}
	}
	if n > 0 {
		d.log.Info("recorded calls denied while the daemon was away", "session", session, "calls", n)
	}
	if remove {
		os.Remove(file)
	}
}
