package supervisor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/render"
	"github.com/toolgate/toolgate/spool"
)

// proposal is a call as run answered it, whichever way it came (the http
// hook's event, the prompt tool's request): what the report keeps
// (runner.saw) and an ask's line shows (runner.announce).
type proposal struct {
	ToolUseID string
	ToolName  string
	Input     json.RawMessage
}

// promptDecider answers the prompt tool through the daemon. An ask waits
// for a person, telling the CLI it is still waiting (progress), and
// survives a restart of the daemon: it asks again for the same
// tool_use_id and finds the same approval. When the daemon cannot be
// reached even after a restart, the call is denied gate_unavailable.
type promptDecider struct{ r *runner }

// ProgressInterval is how often the prompt tool tells the CLI it still
// waits for a person; the CLI's idle watchdog would abort it otherwise.
const ProgressInterval = 2 * time.Second

func (p *promptDecider) Decide(ctx context.Context, req api.PromptRequest, progress func(string)) (api.Verdict, error) {
	req.SessionID = p.r.session
	call := proposal{ToolUseID: req.ToolUseID, ToolName: req.ToolName, Input: req.Input}
	if err := p.r.gate.Lost(); err != nil {
		v := api.Deny(api.ReasonGateUnavailable, api.SourceGate)
		p.r.saw(call, v)
		return v, nil
	}
	announced := false
	for attempt := 0; ; attempt++ {
		v, err := p.r.client.Prompt(ctx, req)
		if err == nil && v.Effect == api.EffectAsk {
			if !announced {
				announced = true
				p.r.announce(call, v)
			}
			id := v.ApprovalID
			if v, err = p.wait(ctx, id, progress); err == nil {
				p.r.decided(id, v)
			}
		}
		if err == nil {
			p.r.saw(call, v)
			return v, nil
		}
		if ctx.Err() != nil {
			return api.Verdict{}, ctx.Err() // the CLI gave up on this call
		}
		if client.IsUnavailable(err) && attempt < 3 && p.r.gate.Lost() == nil && p.r.gate.restart(ctx) {
			continue // the daemon is back: ask again, it finds the same approval
		}
		p.r.log.Error("permission prompt", "tool_use_id", req.ToolUseID, "err", err)
		v = api.Deny(api.ReasonGateUnavailable, api.SourceGate)
		p.r.spoolDeny(call, v)
		p.r.saw(call, v)
		return v, nil
	}
}

// wait waits for the approval, sending progress to the CLI meanwhile.
func (p *promptDecider) wait(ctx context.Context, id string, progress func(string)) (api.Verdict, error) {
	type result struct {
		v   api.Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := p.r.client.Wait(ctx, id)
		done <- result{v, err}
	}()
	if progress == nil {
		progress = func(string) {}
	}
	tick := time.NewTicker(ProgressInterval)
	defer tick.Stop()
	// At once: the first notification of a request may be lost while the
	// response turns into an event stream; the later ones are not.
	progress("waiting for a person to approve " + id)
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-tick.C:
			progress("waiting for a person to approve " + id)
		}
	}
}

// announce prints the one progress line of an ask on stderr.
func (r *runner) announce(req proposal, v api.Verdict) {
	left := ""
	if v.ExpiresAt != nil {
		left = "; expires in " + time.Until(*v.ExpiresAt).Round(time.Second).String()
	}
	how := "toolgate approve " + v.ApprovalID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if st, err := r.client.Status(ctx); err == nil && st.Fleet {
		how = "toolgate approve " + v.ApprovalID + " --fleet DSN (an approver's), or toolgate web --fleet DSN"
	}
	cancel()
	whole := ""
	if render.Clipped(req.ToolName, req.Input, 60) {
		whole = "; toolgate show " + v.ApprovalID + " shows it whole"
	}
	fmt.Fprintf(r.cfg.Stderr, "toolgate: waiting for approval %s (%s: %s) — %s%s%s\n",
		v.ApprovalID, req.ToolName, render.Summary(req.ToolName, req.Input, 60), how, left, whole)
}

// decided prints the line that ends an announced ask's wait.
func (r *runner) decided(id string, v api.Verdict) {
	who := cmp.Or(v.Actor, v.Source)
	switch {
	case v.ReasonCode == api.ReasonApprovalExpired:
		fmt.Fprintf(r.cfg.Stderr, "toolgate: %s expired: nobody decided in time\n", id)
	case v.Effect == api.EffectAllow:
		fmt.Fprintf(r.cfg.Stderr, "toolgate: %s approved by %s\n", id, who)
	default:
		fmt.Fprintf(r.cfg.Stderr, "toolgate: %s denied by %s\n", id, who)
	}
}

// spoolDeny records a call denied without the daemon, as the hook does.
func (r *runner) spoolDeny(req proposal, v api.Verdict) {
	spool.Append(r.spool, spool.Line{Time: time.Now().UTC(), Event: api.PreToolUse, ToolUseID: req.ToolUseID,
		ToolName: req.ToolName, ReasonCode: v.ReasonCode})
}

// saw keeps what run itself answered for a call, for the report: the
// daemon's record is checked against it.
func (r *runner) saw(req proposal, v api.Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answered == nil {
		r.answered = map[string]api.Call{}
	}
	if prev, ok := r.answered[req.ToolUseID]; ok && prev.Effect.Terminal() {
		return // the first terminal answer stands (a repeat of the id is the daemon's to record)
	}
	r.answered[req.ToolUseID] = api.Call{ToolUseID: req.ToolUseID, SessionID: r.session, ToolName: req.ToolName,
		Input: req.Input, ProposedAt: time.Now().UTC(), Verdict: v}
}
