package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// curl sends a request from another process (curl), as a process of the
// user other than the session's owner would; prefix runs it through a
// command first (setpriv, say).
func curl(t *testing.T, sock, method, path, body string, prefix ...string) (int, string) {
	t.Helper()
	args := append(prefix, "curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", sock, "-X", method,
		"-H", api.HeaderProtocol+": "+strconv.Itoa(api.ProtocolVersion), "http://toolgate"+path)
	if body != "" {
		args = append(args, "-d", body)
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	text := strings.TrimSpace(string(out))
	i := strings.LastIndexByte(text, '\n')
	code, _ := strconv.Atoi(text[i+1:])
	return code, text[:max(i, 0)]
}

// Only the process that registered a session may end it or name its
// claude: another process of the user could otherwise take the session off
// the list of gated ones (and then approve its calls) or make a stranger
// its claude. The attempts are refused and kept in the audit.
func TestOnlyTheOwnerEndsItsSession(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	sid := registerAs(t, c, stranger(t), time.Hour, "wait")
	code, body := curl(t, p.Socket(), "POST", "/v1/sessions/"+sid+"/end", "")
	if code != 403 || !strings.Contains(body, `"not_owner"`) {
		t.Errorf("end from another process: %d %s", code, body)
	}
	code, body = curl(t, p.Socket(), "POST", "/v1/sessions/"+sid+"/claude", `{"pid":1}`)
	if code != 403 || !strings.Contains(body, `"not_owner"`) {
		t.Errorf("claude pid from another process: %d %s", code, body)
	}
	if s, _ := c.Session(ctx, sid); s.EndedAt != nil || s.ClaudePID == 1 {
		t.Fatalf("the session changed: %+v", s)
	}
	if s, err := c.EndSession(ctx, sid); err != nil || s.EndedAt == nil || s.EndReason != api.EndEnded {
		t.Errorf("the owner's end: %+v %v", s, err)
	}
	var buf strings.Builder
	if err := client.NewClient(p.ApproveSocket()).ExportAudit(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `"kind":"incident"`); n != 2 || !strings.Contains(buf.String(), `"what":"not_owner"`) {
		t.Errorf("%d incidents in the audit, want the 2 refusals:\n%s", n, buf.String())
	}
}

// A session whose processes are all gone, never ended (a toolgate run
// killed with SIGKILL, claude with it), is ended as abandoned, and its
// waiting approval can no longer be approved.
func TestAbandonedSessionEnds(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	supervisor, claude := exec.Command("sleep", "300"), exec.Command("sleep", "300")
	for _, cmd := range []*exec.Cmd{supervisor, claude} {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	sid := registerAs(t, c, supervisor.Process.Pid, time.Hour, "wait")
	if err := c.SetClaudePID(ctx, sid, claude.Process.Pid); err != nil {
		t.Fatal(err)
	}
	v := askFor(t, c, sid, "t1", "git push")
	supervisor.Process.Kill()
	supervisor.Wait()
	time.Sleep(2 * abandonedCheck) // the scenario: a claude that outlives its run stays gated
	if s, _ := c.Session(ctx, sid); s.EndedAt != nil {
		t.Fatalf("a session whose claude lives was ended: %+v", s)
	}
	claude.Process.Kill()
	claude.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := c.Session(ctx, sid)
		if err == nil && s.EndedAt != nil {
			if s.EndReason != api.EndAbandoned {
				t.Errorf("end reason %q", s.EndReason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an abandoned session never ended: %+v %v", s, err)
		}
		time.Sleep(50 * time.Millisecond) // polling what the daemon records
	}
	d, err := client.NewClient(p.ApproveSocket()).Approval(ctx, v.ApprovalID)
	if err != nil || d.Approval.Status != api.StatusExpired {
		t.Errorf("the abandoned session's approval: %+v %v", d.Approval, err)
	}
}

// While a contained session runs, a process with no_new_privs (as every
// process the contained model starts has) cannot decide an approval, even
// one that left the session's process tree and cleared its environment.
func TestContainedProcessesCannotApprove(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(`{"version":1,"default":"ask","rules":[]}`),
		PolicyName: "p", SupervisorPID: stranger(t), ApprovalTimeout: api.Duration(time.Hour), Contained: true})
	if err != nil {
		t.Fatal(err)
	}
	v := askFor(t, c, s.ID, "t1", "make")
	code, body := curl(t, p.ApproveSocket(), "POST", "/v1/approvals/"+v.ApprovalID+"/decide", `{"decision":"approve"}`,
		"env", "-i", "setpriv", "--no-new-privs")
	if code != 403 || !strings.Contains(body, "no_new_privs") {
		t.Errorf("a decision with no_new_privs: %d %s", code, body)
	}
	// A person's process passing on a click from a notification server
	// the session started: the server is checked too.
	contained := exec.Command("setpriv", "--no-new-privs", "sleep", "60")
	if err := contained.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { contained.Process.Kill(); contained.Wait() }()
	via := fmt.Sprintf(`{"decision":"approve","via_pid":%d}`, contained.Process.Pid)
	code, body = curl(t, p.ApproveSocket(), "POST", "/v1/approvals/"+v.ApprovalID+"/decide", via, "env", "-i")
	if code != 403 || !strings.Contains(body, "no_new_privs") {
		t.Errorf("a decision through a process with no_new_privs: %d %s", code, body)
	}
	code, body = curl(t, p.ApproveSocket(), "POST", "/v1/approvals/"+v.ApprovalID+"/decide", `{"decision":"approve"}`, "env", "-i")
	if code != 200 {
		t.Errorf("a person's decision: %d %s", code, body)
	}
}

// A socket file removed or replaced by another process (to stand in for
// the gate, or cut sessions off it) is bound again by the daemon.
func TestDaemonTakesItsSocketBack(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	os.Remove(p.Socket())
	impostor, err := net.Listen("unix", p.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := c.Status(sctx) // the impostor never answers
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never took its socket back: %v", err)
		}
	}
}
