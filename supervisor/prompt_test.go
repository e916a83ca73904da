package supervisor

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// Claude Code gives up on run's hook or the prompt tool at its timeout,
// which progress does not extend: it must outlast the longest wait any
// ask of the session may have, a rule's approval_timeout included, or a
// person approves a call Claude Code no longer waits for.
func TestClaudeCodeOutwaitsTheLongestAsk(t *testing.T) {
	for _, tt := range []struct {
		doc     string
		session time.Duration
		want    time.Duration
	}{
		{`{"version":1,"default":"ask","rules":[]}`, 15 * time.Minute, 20 * time.Minute},
		{`{"version":1,"default":"ask","rules":[
			{"id":"slow","effect":"ask","tool":"Bash","approval_timeout":"1h"},
			{"id":"quick","effect":"ask","tool":"Read","approval_timeout":"2m"}]}`, 15 * time.Minute, 65 * time.Minute},
		{`{"version":1,"default":"ask","rules":[{"id":"quick","effect":"ask","tool":"Read","approval_timeout":"2m"}]}`,
			45 * time.Minute, 50 * time.Minute},
	} {
		p, err := policy.Parse("p.json", []byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := AskTimeout(tt.session, p.LongestApprovalTimeout()); got != tt.want {
			t.Errorf("%s with a session timeout of %v: Claude Code waits %v, want %v", tt.doc, tt.session, got, tt.want)
		}
	}
}
