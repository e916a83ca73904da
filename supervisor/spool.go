package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/ledger"
	"github.com/toolgate/toolgate/supervisor/api"
)

// ingestSpools ingests every session's spool file, at start: a file is
// removed once its session is over (ended, or its supervisor gone).
func (d *Daemon) ingestSpools(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(d.cfg.Paths.RuntimeDir, "spool", "*.jsonl"))
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
// unreachable (spool/<session>.jsonl) into the ledger, each with its deny
// gate_unavailable, so that the audit misses none of them, and removes the
// file when asked. It is idempotent: a call already recorded is left as
// it is.
func (d *Daemon) ingestSpool(ctx context.Context, session string, remove bool) {
	file := d.cfg.Paths.SpoolFile(session)
	n := 0
	{
		f, err := os.Open(file)
		if err != nil {
			return
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 128<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Event     string          `json:"hook_event_name"`
				ToolUseID string          `json:"tool_use_id"`
				ToolName  string          `json:"tool_name"`
				AgentID   string          `json:"agent_id"`
				Input     json.RawMessage `json:"tool_input"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || line.ToolUseID == "" {
				continue
			}
			if line.Event == "PostToolUse" || line.Event == "PostToolUseFailure" {
				// It ran while the daemon was away: record that, once (the
				// file is read again at every start until the session ends).
				if c, err := d.ledger.Call(ctx, line.ToolUseID); err == nil && c.Executions == 0 {
					if _, err := d.ledger.RecordExecution(ctx, line.ToolUseID, ledger.Execution{
						Failed: line.Event == "PostToolUseFailure", Outcome: "recorded from the spool"}); err == nil {
						n++
					}
				}
				continue
			}
			if line.Event != "PreToolUse" || line.ToolName == "" {
				continue
			}
			if len(line.Input) == 0 {
				line.Input = json.RawMessage(`{}`) // too large to spool: the audit keeps the call without it
			}
			_, existed, err := d.ledger.Gate(ctx, ledger.Proposal{ToolUseID: line.ToolUseID, SessionID: session,
				AgentID: line.AgentID, ToolName: line.ToolName, Input: line.Input},
				func(c ledger.Call, existed bool) (*ledger.CallDecision, *ledger.WriteBack) {
					if existed && c.Decision != nil {
						return nil, nil
					}
					return &ledger.CallDecision{Effect: api.Deny, ReasonCode: api.ReasonGateUnavailable, Source: api.SourceGate},
						&ledger.WriteBack{ToolUseID: line.ToolUseID, Effect: api.Deny, ReasonCode: api.ReasonGateUnavailable, WroteBack: true}
				})
			if err == nil && !existed {
				n++
			}
		}
		f.Close()
	}
	if n > 0 {
		d.log.Info("recorded calls denied while the daemon was away", "session", session, "calls", n)
	}
	if remove {
		os.Remove(file)
	}
}
