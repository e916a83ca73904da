package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// GET /v1/history on approve.sock streams the recorded calls of a window,
// as proposed, each after what the gate knew of its session: the working directory and
// home it registered with and the tools its MCP servers published (the
// names the daemon keeps them under are the ones a replay reads). It is
// not on gate.sock, and a bad bound is refused.
func TestHistoryRoute(t *testing.T) {
	p := testPaths(t)
	c := startDaemonInProcess(t, p)
	tools := []api.ToolInfo{{Name: "mcp__gh__pr", InputSchema: json.RawMessage(`{"type":"object","required":["base"]}`)},
		{Name: "mcp__gh__sign", RequiresUserInteraction: true}}
	s, err := c.Register(ctx, api.RegisterRequest{Policy: json.RawMessage(testPolicy), PolicyName: "p", SupervisorPID: os.Getpid(),
		Cwd: "/project", Home: "/home/u", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hook(ctx, api.HookRequest{SessionID: s.ID, Event: pre("toolu_h1", "mcp__gh__pr", `{}`)}); err != nil {
		t.Fatal(err)
	}
	approver := client.NewClient(p.ApproveSocket())
	var items []api.HistoryItem
	if err := approver.History(ctx, time.Time{}, time.Time{}, func(i api.HistoryItem) error { items = append(items, i); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Session == nil || items[1].Call == nil {
		t.Fatalf("history: %+v", items)
	}
	hs := items[0].Session
	if hs.ID != s.ID || hs.Cwd != "/project" || hs.Home != "/home/u" || len(hs.Tools) != 2 || !hs.Tools[1].RequiresUserInteraction ||
		hs.PolicySHA256 != s.PolicySHA256 || hs.PolicyVersion != s.PolicyVersion {
		t.Errorf("session %+v", hs)
	}
	// The call as proposed, what a replay decides on; how it was decided
	// is in the audit.
	if call := items[1].Call; call.ToolUseID != "toolu_h1" || call.SessionID != s.ID || call.ToolName != "mcp__gh__pr" ||
		string(call.Input) != "{}" || call.ProposedAt.IsZero() {
		t.Errorf("call %+v", call)
	}
	n := 0
	future := time.Now().Add(time.Hour)
	approver.History(ctx, future, time.Time{}, func(api.HistoryItem) error { n++; return nil })
	if n != 0 {
		t.Errorf("a window after every call gave %d items", n)
	}
	if err := c.History(ctx, time.Time{}, time.Time{}, func(api.HistoryItem) error { return nil }); errorCode(err) != "http_404" {
		t.Errorf("history on gate.sock: %v", err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", p.ApproveSocket())
	}}}
	req, _ := http.NewRequest("GET", "http://toolgate/v1/history?since=yesterday", nil)
	req.Header.Set(api.HeaderProtocol, strconv.Itoa(api.ProtocolVersion))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad since: %d", resp.StatusCode)
	}
}
