package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/modelscript"
)

// toolgate run --on-ask defer ends a run at its ask, a person decides
// whenever they like, and toolgate resume runs claude on, once.

const deferPolicy = `{"version": 1, "default": "allow", "rules": [
  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"}
]}`

// resume runs toolgate resume --json with a scripted model for the rest
// of the conversation, and returns its exit code, what it listed, and the
// model (what claude sent it).
func (w *world) resume(script []modelscript.Step, args ...string) (int, []map[string]any, *modelscript.Server) {
	w.t.Helper()
	model, err := modelscript.Start(script)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { model.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolgateBin, append([]string{"resume", "--json"}, args...)...)
	cmd.Env = w.env(model)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		w.t.Fatalf("toolgate resume: %v", err)
	}
	w.t.Logf("toolgate resume exited %d:\n%s\nstderr:\n%s", cmd.ProcessState.ExitCode(), out, stderr.String())
	var doc struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		w.t.Fatalf("resume --json: %v: %s", err, out)
	}
	return cmd.ProcessState.ExitCode(), doc.Sessions, model
}

// deferred runs a session that defers its touch, and checks the run ended
// at once with 81 and the approval in its report.
func (w *world) deferred(t *testing.T, steps []modelscript.Step, extra ...string) (result, string) {
	t.Helper()
	start := time.Now()
	r := w.run(runArgs{policy: deferPolicy, toolgate: append([]string{"--on-ask", "defer"}, extra...), script: steps})
	if r.code != 81 || r.report.Deferred == nil || r.report.Counts.Deferred != 1 {
		t.Fatalf("the deferred run: exit %d, deferred %+v, counts %+v", r.code, r.report.Deferred, r.report.Counts)
	}
	t.Logf("the deferred run took %s", time.Since(start).Round(time.Millisecond))
	id := r.report.Deferred.ApprovalID
	contains(t, "the summary", r.stderr, id, "toolgate resume")
	if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err == nil {
		t.Fatal("the deferred call ran before anyone decided")
	}
	return r, id
}

// The run defers through either hook transport (the http hook answers
// "defer" as the hook binary does); resume goes on with the default.
func TestDeferApproveResume(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, transport string) {
		w := newWorld(t)
		r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", "touch deferred.txt"))}, "--hook-transport", transport)
		// Nothing decided yet: resume leaves the session waiting.
		code, listed, model := w.resume(nil)
		if code != 0 || len(listed) != 1 || listed[0]["outcome"] != "waiting" || len(model.ToolResults()) != 0 {
			t.Fatalf("resume before a decision: exit %d %v", code, listed)
		}
		if code, out := w.toolgate("approve", id); code != 0 {
			t.Fatalf("approve: %d %s", code, out)
		}
		// --project of another directory leaves it alone.
		elsewhere := t.TempDir()
		code, listed, model = w.resume(nil, "--project", elsewhere)
		if code != 0 || len(listed) != 0 || len(model.ToolResults()) != 0 {
			t.Fatalf("resume --project %s: exit %d %v", elsewhere, code, listed)
		}
		code, listed, model = w.resume([]modelscript.Step{{Text: "done"}}, "--project", w.project)
		if code != 0 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
			t.Fatalf("resume: exit %d %v", code, listed)
		}
		if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err != nil {
			t.Error("the approved call did not run")
		}
		if _, ok := model.ToolResults()["toolu_def"]; !ok {
			t.Error("the model never heard how its call went")
		}
		var call api.Call
		for _, c := range w.audit(r.report.SessionID) {
			if c.ToolUseID == "toolu_def" {
				call = c
			}
		}
		if call.Effect != "allow" || call.Executions != 1 || !strings.HasPrefix(call.Actor, "user:") || len(call.Repeats) != 0 {
			t.Errorf("the audit of the deferred call: %+v", call)
		}
		// A second resume finds nothing to do.
		code, listed, model = w.resume(nil)
		if code != 0 || len(listed) != 0 || len(model.ToolResults()) != 0 {
			t.Errorf("a second resume: exit %d %v", code, listed)
		}
	})
}

func TestDeferDenyAndExpiry(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deny", "expire"} {
		t.Run(how, func(t *testing.T) {
			w := newWorld(t)
			timeout := "1h"
			if how == "expire" {
				timeout = "2s"
			}
			_, id := w.deferred(t, []modelscript.Step{step(bash("toolu_def", "touch deferred.txt"))}, "--approval-timeout", timeout)
			want, reason := 77, "needs_review"
			if how == "deny" {
				if code, out := w.toolgate("deny", id); code != 0 {
					t.Fatalf("deny: %d %s", code, out)
				}
			} else {
				// The daemon expires it; wait on it as toolgate run would.
				if v, err := w.client().Wait(context.Background(), id); err != nil || v.ReasonCode != api.ReasonApprovalExpired {
					t.Fatalf("wait for the expiry: %+v %v", v, err)
				}
				want, reason = 75, api.ReasonApprovalExpired
			}
			code, listed, model := w.resume([]modelscript.Step{{Text: "done"}})
			if code != want || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
				t.Fatalf("resume: exit %d (want %d) %v", code, want, listed)
			}
			if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err == nil {
				t.Error("a call nobody approved ran")
			}
			seen := model.ToolResults()["toolu_def"]
			if !seen.IsError || !strings.Contains(seen.Text, reason) {
				t.Errorf("the model saw %+v, want the deny with %s", seen, reason)
			}
		})
	}
}

// One message with two calls: the allowed one runs in the first run, the
// asking one is deferred. With two asks, Claude Code would keep only the
// last deferred one: the second is denied deferred_sibling.
func TestDeferInABatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r, id := w.deferred(t, []modelscript.Step{step(bash("toolu_echo", "echo ran > echo.txt"), bash("toolu_def", "touch deferred.txt"),
		bash("toolu_sib", "touch sibling.txt"))})
	if _, err := os.Stat(filepath.Join(w.project, "echo.txt")); err != nil {
		t.Error("the allowed sibling did not run")
	}
	if c := r.call(t, "toolu_sib"); c.Effect != "deny" || c.ReasonCode != api.ReasonDeferredSibling {
		t.Errorf("the second ask: %+v", c)
	}
	if code, out := w.toolgate("approve", id); code != 0 {
		t.Fatalf("approve: %d %s", code, out)
	}
	// The resumed run reports the whole session: the sibling was denied,
	// so it ends 77.
	if code, listed, _ := w.resume([]modelscript.Step{{Text: "done"}}); code != 77 || len(listed) != 1 || listed[0]["outcome"] != "resumed" {
		t.Fatalf("resume: exit %d %v", code, listed)
	}
	if _, err := os.Stat(filepath.Join(w.project, "deferred.txt")); err != nil {
		t.Error("the deferred call did not run on resume")
	}
	if _, err := os.Stat(filepath.Join(w.project, "sibling.txt")); err == nil {
		t.Error("the denied sibling ran")
	}
}
