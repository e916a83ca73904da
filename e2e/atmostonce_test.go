package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// Random interleavings of what sessions, people and crashes do to the
// daemon and its ledger, across several sessions that propose the same
// tool_use_ids: proposals (allowed, asked, deferred), people's decisions,
// the prompt tool's questions, resumes, executions, session ends, and kill
// -9 of the daemon at any point. Whatever the order, a tool_use_id is
// allowed once, to the session that proposed it first, and runs at most
// once. TOOLGATE_ATMOSTONCE_FOR sets how long it runs (default 20s).
//
// The sessions' side (their supervisor: register, hook, prompt, resume,
// outcomes, end) is a helper process, this test binary run again; the
// test itself is the person, outside every session, so that the daemon
// takes its decisions.
func TestRandomInterleavingsRunEachCallAtMostOnce(t *testing.T) {
	t.Parallel()
	run := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("TOOLGATE_ATMOSTONCE_FOR")); err == nil {
		run = d
	}
	w := newWorld(t)
	w.startDaemon(toolgateBin)
	t.Cleanup(w.stopDaemon)
	h := startSupervisorHelper(t, w)
	person := w.approver()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	type session struct {
		id        string
		defers    bool   // --on-ask defer
		ended     bool   // its run ended
		deferring string // the call it deferred, once it did
	}
	var sessions []*session
	inputs := map[string]string{} // a tool_use_id's command, as first proposed
	granted := map[string]string{}
	executed := map[string]bool{}
	var counts struct{ ops, allows, asks, denies, decisions, resumes, prompts, executions, crashes, errors int }
	live := func() []*session {
		var out []*session
		for _, s := range sessions {
			if !s.ended {
				out = append(out, s)
			}
		}
		return out
	}
	// grant notes an allow the gate gave session s for id: from a
	// proposal (hook), which must happen once for an id, or read again by
	// the prompt tool.
	hookAllows := map[string]int{}
	grant := func(s *session, id string, fromHook bool) {
		counts.allows++
		if was, ok := granted[id]; ok && was != s.id {
			t.Errorf("%s was allowed to %s and to %s", id, was, s.id)
		}
		granted[id] = s.id
		if fromHook {
			if hookAllows[id]++; hookAllows[id] > 1 {
				t.Errorf("%s was allowed %d times to proposals of it", id, hookAllows[id])
			}
		}
	}
	// A crash is a SIGKILL at a random moment up to 20 ms on, while the
	// operations go on: it lands between two of them or in one.
	var killed chan struct{}
	crash := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := w.client().Status(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the daemon to kill: %v", err)
		}
		killed = make(chan struct{})
		go func(pid int, after time.Duration, done chan struct{}) {
			time.Sleep(after) // a random point of what runs meanwhile, not a wait for it
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 10*time.Second)
			close(done)
		}(st.PID, time.Duration(rng.IntN(20_000))*time.Microsecond, killed)
	}
	fresh := 0 // new tool_use_ids come as the sessions go on
	deadline := time.Now().Add(run)
	for time.Now().Before(deadline) {
		if killed != nil {
			select {
			case <-killed:
				killed = nil
				w.startDaemon(toolgateBin)
			default:
			}
		}
		counts.ops++
		switch op := rng.IntN(100); {
		case op < 8 && len(live()) < 4:
			s := &session{defers: rng.IntN(2) == 0}
			r := h.do(t, helperOp{Op: "register", Defer: s.defers})
			if r.Err != "" {
				counts.errors++
				continue
			}
			s.id = r.Session
			sessions = append(sessions, s)
		case op < 50 && len(live()) > 0:
			ss := live()
			s := ss[rng.IntN(len(ss))]
			if rng.IntN(3) == 0 {
				fresh++
			}
			id := fmt.Sprintf("toolu_pool_%04d", fresh+rng.IntN(12))
			cmd := []string{"ls", "touch x"}[rng.IntN(2)]
			if was, ok := inputs[id]; ok && rng.IntN(4) > 0 {
				cmd = was // mostly the same call again
			}
			r := h.do(t, helperOp{Op: "hook", Session: s.id, ID: id, Command: cmd})
			switch {
			case r.Err != "":
				counts.errors++
				continue
			case r.Effect == api.EffectAllow:
				grant(s, id, true)
			case r.Defer:
				s.deferring = id
			case r.Effect == api.EffectAsk:
				counts.asks++
			default:
				counts.denies++
			}
			if _, ok := inputs[id]; !ok {
				inputs[id] = cmd
			}
			if s.deferring != "" {
				// The run ends at once on a deferred call.
				if r := h.do(t, helperOp{Op: "end", Session: s.id}); r.Err == "" {
					s.ended = true
				}
			}
		case op < 62:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			pending, err := person.Pending(ctx)
			if err == nil && len(pending) > 0 {
				a := pending[rng.IntN(len(pending))]
				decision := []string{"approve", "deny"}[rng.IntN(2)]
				if _, err := person.Decide(ctx, a.Approval.ID, api.DecideRequest{Decision: decision}); err == nil {
					counts.decisions++
				}
			}
			cancel()
		case op < 70:
			// The prompt tool asks about a call of a session that waits.
			ss := live()
			if len(ss) == 0 {
				continue
			}
			s := ss[rng.IntN(len(ss))]
			id := fmt.Sprintf("toolu_pool_%04d", fresh+rng.IntN(12))
			cmd, ok := inputs[id]
			if !ok {
				continue
			}
			counts.prompts++
			if r := h.do(t, helperOp{Op: "prompt", Session: s.id, ID: id, Command: cmd}); r.Err == "" && r.Effect == api.EffectAllow {
				grant(s, id, false)
			}
		case op < 78:
			// toolgate resume supervises no session that is not over: the
			// supervisor's runs end first.
			for _, s := range live() {
				if r := h.do(t, helperOp{Op: "end", Session: s.id}); r.Err == "" {
					s.ended = true
				}
			}
			for _, s := range sessions {
				if s.ended && s.deferring != "" {
					r := h.do(t, helperOp{Op: "resume", Session: s.id})
					if r.Err != "" {
						// It may have been taken up all the same (the daemon
						// was killed before it answered): end it, or it keeps
						// its supervisor from resuming any other.
						h.do(t, helperOp{Op: "end", Session: s.id})
						continue
					}
					counts.resumes++
					s.ended = false
					// Claude Code proposes the deferred call again.
					id := s.deferring
					s.deferring = ""
					if r := h.do(t, helperOp{Op: "hook", Session: s.id, ID: id, Command: inputs[id]}); r.Err == "" && r.Effect == api.EffectAllow {
						grant(s, id, true)
					}
					break
				}
			}
		case op < 90:
			for id, sid := range granted {
				if !executed[id] {
					executed[id] = true
					counts.executions++
					h.do(t, helperOp{Op: "ran", Session: sid, ID: id, Command: inputs[id]})
					break
				}
			}
		case op < 93 && len(live()) > 0:
			ss := live()
			s := ss[rng.IntN(len(ss))]
			if r := h.do(t, helperOp{Op: "end", Session: s.id}); r.Err == "" {
				s.ended = true
			}
		case op >= 98 && killed == nil:
			counts.crashes++
			crash()
		}
	}
	// What the ledger kept, after one more crash.
	if killed != nil {
		<-killed
	} else {
		w.killDaemon(t)
	}
	w.startDaemon(toolgateBin)
	calls := 0
	for _, s := range sessions {
		for _, c := range w.audit(s.id) {
			calls++
			if c.Executions > 1 {
				t.Errorf("%s ran %d times", c.ToolUseID, c.Executions)
			}
			if c.Effect == api.EffectAllow && granted[c.ToolUseID] != "" && granted[c.ToolUseID] != c.SessionID {
				t.Errorf("%s is %s's call, and was allowed to %s", c.ToolUseID, c.SessionID, granted[c.ToolUseID])
			}
		}
	}
	t.Logf("%s: %d operations on %d sessions, %d calls recorded: %d allows to %d ids, %d asks, %d denies, %d decisions, %d prompts, %d resumes, %d executions, %d crashes (kill -9), %d operations failed with the daemon down",
		run, counts.ops, len(sessions), calls, counts.allows, len(granted), counts.asks, counts.denies, counts.decisions, counts.prompts, counts.resumes, counts.executions, counts.crashes, counts.errors)
	if counts.crashes == 0 || counts.executions == 0 || counts.decisions == 0 {
		t.Errorf("the interleavings never crashed, ran or decided anything: the test proves nothing")
	}
}

// killDaemon ends the world's daemon with SIGKILL, at whatever point it
// is, and waits until it is gone.
func (w *world) killDaemon(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := w.client().Status(ctx)
	if err != nil {
		t.Fatalf("the daemon to kill: %v", err)
	}
	syscall.Kill(st.PID, syscall.SIGKILL)
	waitGone(st.PID, 10*time.Second)
}

// helperOp is one thing the sessions' supervisor does, and its answer.
type helperOp struct {
	Op      string `json:"op"` // register, hook, prompt, resume, ran, end
	Defer   bool   `json:"defer,omitempty"`
	Session string `json:"session,omitempty"`
	ID      string `json:"id,omitempty"`
	Command string `json:"command,omitempty"`
}

type helperAnswer struct {
	Session string     `json:"session,omitempty"`
	Effect  api.Effect `json:"effect,omitempty"`
	Defer   bool       `json:"defer,omitempty"`
	Err     string     `json:"err,omitempty"`
}

type supervisorHelper struct {
	enc *json.Encoder
	out *bufio.Scanner
}

// supervisorHelperEnv names the daemon's socket and the project when this
// test binary runs as the sessions' supervisor (serveSupervisor).
const supervisorHelperEnv = "TOOLGATE_E2E_SUPERVISOR"

// startSupervisorHelper runs this test binary again as the supervisor of
// the world's sessions.
func startSupervisorHelper(t *testing.T, w *world) *supervisorHelper {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(w.env(nil), supervisorHelperEnv+"="+w.paths().Socket()+"\n"+w.project)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return &supervisorHelper{json.NewEncoder(in), bufio.NewScanner(out)}
}

func (h *supervisorHelper) do(t *testing.T, op helperOp) helperAnswer {
	t.Helper()
	if err := h.enc.Encode(op); err != nil {
		t.Fatal(err)
	}
	var a helperAnswer
	if !h.out.Scan() || json.Unmarshal(h.out.Bytes(), &a) != nil {
		t.Fatalf("the supervisor helper is gone: %v", h.out.Err())
	}
	return a
}

// serveSupervisor is this process when it is the sessions' supervisor of
// TestRandomInterleavingsRunEachCallAtMostOnce: it reads what to do from
// stdin, a JSON line each, and answers each on stdout.
func serveSupervisor() {
	socket, project, _ := strings.Cut(os.Getenv(supervisorHelperEnv), "\n")
	const policy = `{"version": 1, "default": "allow", "rules": [
  {"id": "ask-touch", "effect": "ask", "tool": "Bash", "input": {"command": {"command": [["touch"]]}}, "reason_code": "needs_review"}]}`
	daemon := client.NewClient(socket)
	home, _ := os.UserHomeDir()
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var op helperOp
		if err := json.Unmarshal(in.Bytes(), &op); err != nil {
			enc.Encode(helperAnswer{Err: err.Error()})
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		input, _ := json.Marshal(map[string]string{"command": op.Command})
		var a helperAnswer
		var err error
		switch op.Op {
		case "register":
			onAsk := api.OnAskWait
			if op.Defer {
				onAsk = api.OnAskDefer
			}
			var s api.Session
			s, err = daemon.Register(ctx, api.RegisterRequest{Policy: []byte(policy), PolicyName: "interleavings",
				ApprovalTimeout: api.Duration(time.Hour), OnAsk: onAsk, Cwd: project, Home: home})
			a.Session = s.ID
		case "hook":
			event, _ := json.Marshal(map[string]any{"hook_event_name": api.PreToolUse, "session_id": "claude-" + op.Session,
				"tool_use_id": op.ID, "tool_name": "Bash", "tool_input": json.RawMessage(input), "cwd": project})
			var r api.HookResponse
			r, err = daemon.Hook(ctx, api.HookRequest{SessionID: op.Session, Event: event})
			if r.Verdict != nil {
				a.Effect, a.Defer = r.Verdict.Effect, r.Defer
			}
		case "prompt":
			var v api.Verdict
			v, err = daemon.Prompt(ctx, api.PromptRequest{SessionID: op.Session, ToolName: "Bash", ToolUseID: op.ID, Input: input})
			a.Effect = v.Effect
		case "resume":
			_, err = daemon.Resume(ctx, op.Session, api.ResumeRequest{})
		case "ran":
			_, err = daemon.Outcomes(ctx, op.Session, []api.Outcome{{ToolUseID: op.ID, ToolName: "Bash", Input: input, Ran: true,
				Outcome: "ok", Seen: "ran", Entry: strconv.FormatInt(time.Now().UnixNano(), 10)}})
		case "end":
			_, err = daemon.EndSession(ctx, op.Session)
		default:
			err = fmt.Errorf("no operation %q", op.Op)
		}
		cancel()
		if err != nil {
			a.Err = err.Error()
		}
		enc.Encode(a)
	}
}
