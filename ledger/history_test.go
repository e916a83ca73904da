package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
)

// historyOf lists what a history source gave, one line an item:
// "session ID HOME TOOLS" or "call ID", and checks that each session
// comes once, before its calls.
func historyOf(t *testing.T, read func(fn func(api.HistoryItem) error) error) []string {
	t.Helper()
	var out []string
	sent := map[string]bool{}
	err := read(func(item api.HistoryItem) error {
		switch {
		case item.Session != nil:
			s := item.Session
			if sent[s.ID] {
				t.Errorf("session %s came twice", s.ID)
			}
			sent[s.ID] = true
			out = append(out, fmt.Sprintf("session %s %s %s %d", s.ID, s.Cwd, s.Home, len(s.Tools)))
		case item.Call != nil:
			if s := item.Call.SessionID; s != "gone" && !sent[s] {
				t.Errorf("call %s came before its session %s", item.Call.ToolUseID, s)
			}
			out = append(out, "call "+item.Call.ToolUseID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// History (from the ledger) and ReadHistory (from an export of it) give
// the same calls of a window, each after what the gate knew of its
// session; a call whose session is not recorded comes alone.
func TestHistory(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	settings := json.RawMessage(`{"policy_name":"p","home":"/home/u","tools":[{"name":"mcp__gh__pr","input_schema":{"type":"object"}}],"supervisor_pid":1}`)
	for _, s := range []api.Session{{ID: "s1", Cwd: "/p1", Settings: settings}, {ID: "s2", Cwd: "/p2"}} {
		if _, _, err := l.StartSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	start := c.Now()
	for i, s := range []string{"s1", "s2", "s1", "gone", "s2"} {
		c.Add(time.Minute)
		if _, _, err := l.Propose(ctx, api.Call{ToolUseID: fmt.Sprintf("toolu_%d", 5-i), SessionID: s, ToolName: "Bash", Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var export bytes.Buffer
	if err := l.Export(ctx, &export, api.Incident{PID: 1}); err != nil {
		t.Fatal(err)
	}
	since, until := start.Add(2*time.Minute), start.Add(5*time.Minute) // the 2nd, 3rd and 4th calls
	fromLedger := historyOf(t, func(fn func(api.HistoryItem) error) error { return l.History(ctx, since, until, fn) })
	fromExport := historyOf(t, func(fn func(api.HistoryItem) error) error {
		return ReadHistory(bytes.NewReader(export.Bytes()), since, until, fn)
	})
	want := []string{"call toolu_2", "call toolu_3", "call toolu_4", "session s1 /p1 /home/u 1", "session s2 /p2  0"} // sorted
	for name, got := range map[string][]string{"ledger": fromLedger, "export": fromExport} {
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("from the %s: %q, want %q", name, got, want)
		}
	}
	all := historyOf(t, func(fn func(api.HistoryItem) error) error { return l.History(ctx, time.Time{}, time.Time{}, fn) })
	if len(all) != 7 {
		t.Errorf("the whole history: %q", all)
	}
	if err := ReadHistory(strings.NewReader("not json\n"), time.Time{}, time.Time{}, func(api.HistoryItem) error { return nil }); err == nil {
		t.Error("a file that is not an export was read")
	}
	stop := errors.New("stop")
	if err := l.History(ctx, time.Time{}, time.Time{}, func(api.HistoryItem) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("an error of fn: %v", err)
	}
}
