package ledger

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// A call that could not be made durable (its batch's checkpoint failed:
// here the journal could not take its next generation's name) must not
// leave the audit chain's head it advanced behind: a later call chained
// on the lost event would break the chain for good.
func TestAChainAfterAFailedCheckpointVerifies(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.StartSession(ctx, api.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	gens, _ := filepath.Glob(filepath.Join(dir, "journal-*.wal"))
	if len(gens) != 1 {
		t.Fatalf("journals %v", gens)
	}
	var gen int
	fmt.Sscanf(filepath.Base(gens[0]), "journal-%d.wal", &gen)
	block := filepath.Join(dir, fmt.Sprintf("journal-%d.wal", gen+1))
	if err := os.Mkdir(block, 0o700); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 256<<10)
	failed := -1
	for i := 0; i < 100 && failed < 0; i++ {
		c := api.Call{ToolUseID: fmt.Sprintf("toolu_%d", i), SessionID: "s", ToolName: "Bash",
			Input: json.RawMessage(fmt.Sprintf(`{"command":"echo %d","pad":"%s"}`, i, pad))}
		if _, _, err := l.Propose(ctx, c); err != nil {
			failed = i
			t.Logf("call %d failed: %v", i, err)
		}
	}
	if failed < 0 {
		t.Fatal("no checkpoint failed")
	}
	os.Remove(block) // a transient failure
	c := api.Call{ToolUseID: "toolu_after", SessionID: "s", ToolName: "Bash", Input: json.RawMessage(`{"command":"true"}`)}
	_, _, perr := l.Propose(ctx, c)
	res, err := l.Verify(ctx)
	if err != nil || !res.Valid {
		t.Errorf("the call after the failed one: %v; the audit chain: %+v %v", perr, res, err)
	}
	// Opened again (the restart the stopped ledger asks for), it goes on.
	l.Close()
	if l, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, err := l.Propose(ctx, c); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if res, err := l.Verify(ctx); err != nil || !res.Valid {
		t.Errorf("after a restart, the audit chain: %+v %v", res, err)
	}
}
