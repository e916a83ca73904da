package policy

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/paths"
)

// A built-in tool other than Bash that runs a shell command (Claude Code's
// Monitor) is decided as that Bash command too, and the stricter verdict
// stands: a policy that allows Monitor, to watch a build, does not let it
// run what the Bash rules deny or ask about, and the guard reads its
// command as it reads Bash's. MCP tools with a command field are their
// servers' own, decided by their rules alone.
func TestShellRunningToolsMeetTheBashRules(t *testing.T) {
	root := t.TempDir()
	p := mustParse(t, `{"version":1,"default":"ask","rules":[
		{"id":"deny-rm","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm","-r"]]}},"reason_code":"destructive"},
		{"id":"allow-make","effect":"allow","tool":"Bash","input":{"command":{"command":[["make"]]}}},
		{"id":"allow-monitor","effect":"allow","tool":"Monitor"},
		{"id":"allow-mcp","effect":"allow","tool":"mcp__ops__*"}]}`)
	s := NewSession(p, nil, root+"/project", root)
	s.Guard = NewGuard(GuardPaths{Gate: paths.Paths{RuntimeDir: root + "/run/toolgate", StateDir: root + "/state/toolgate"}})
	for _, tt := range []struct {
		tool, input string
		want        api.Effect
		rule        string
	}{
		{"Monitor", `{"command":"rm -r victim"}`, api.EffectDeny, "deny-rm"},
		{"Monitor", `{"command":"echo hi >> ` + root + `/state/toolgate/policy.json"}`, api.EffectDeny, GuardCommands},
		{"Monitor", `{"command":"tail -f build.log"}`, api.EffectAsk, ""},
		{"Monitor", `{"command":"make -q all"}`, api.EffectAllow, "allow-monitor"},
		{"Monitor", `{"description":"no command"}`, api.EffectAllow, "allow-monitor"},
		{"mcp__ops__run", `{"command":"rm -r victim"}`, api.EffectAllow, "allow-mcp"},
	} {
		v := s.Evaluate(tt.tool, []byte(tt.input))
		if v.Effect != tt.want || tt.rule != "" && v.RuleID != tt.rule {
			t.Errorf("%s %s: %s by %q, want %s by %q", tt.tool, tt.input, v.Effect, v.RuleID, tt.want, tt.rule)
		}
	}
	v, traces := s.Explain("Monitor", []byte(`{"command":"rm -r victim"}`))
	var said bool
	for _, tr := range traces {
		said = said || tr.RuleID == "deny-rm" && tr.Matched && strings.HasPrefix(tr.Why, "as the Bash command it runs")
	}
	if v.Effect != api.EffectDeny || !said {
		t.Errorf("explain of Monitor rm -r: %s, traces %+v", v.Effect, traces)
	}
}
