package policy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// benchPolicy builds a policy of n rules of every kind, none of which match
// the benchmark calls, so that Decide walks all of them: the worst case.
func benchPolicy(b *testing.B, n int) *Policy {
	b.Helper()
	effects := []api.Effect{api.EffectDeny, api.EffectAsk, api.EffectAllow}
	var rules []map[string]any
	for i := range n {
		r := map[string]any{"id": fmt.Sprintf("r%d", i), "effect": effects[i%3], "reason_code": "c"}
		switch i % 5 {
		case 0:
			r["tool"] = fmt.Sprintf("mcp__srv%d__*", i)
		case 1:
			r["tool"] = "Read"
			r["input"] = map[string]any{"file_path": map[string]any{"path_under": fmt.Sprintf("dir%d", i)}}
		case 2:
			r["tool"] = "Bash"
			r["input"] = map[string]any{"command": map[string]any{"command": [][]string{{fmt.Sprintf("cmd%d", i), "x"}}}}
		case 3:
			r["tool"] = "mcp__github__create_pull_request"
			r["input"] = map[string]any{"base": map[string]any{"const": fmt.Sprintf("branch%d", i)}}
		case 4:
			r["tool"] = "WebFetch"
			r["input"] = map[string]any{"url": map[string]any{"pattern": fmt.Sprintf("https://h%d\\.example/.*", i)}}
		}
		rules = append(rules, r)
	}
	doc, _ := json.Marshal(map[string]any{"version": 1, "default": "ask", "rules": rules})
	p, err := Parse("bench.json", doc)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkDecide(b *testing.B) {
	calls := []struct {
		name string
		call Call
	}{
		{"mcp", call("mcp__github__create_pull_request", `{"base":"main","head":"feat/x","title":"Add x","body":"A longer body of text."}`)},
		{"read", call("Read", `{"file_path":"/project/src/main.go"}`)},
		{"bash", call("Bash", `{"command":"git status && go test ./... | tail -n 20","description":"run tests"}`)},
	}
	for _, n := range []int{10, 100, 1000} {
		p := benchPolicy(b, n)
		for _, c := range calls {
			b.Run(fmt.Sprintf("rules=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if d := p.Decide(c.call); d.RuleID != "" {
						b.Fatalf("unexpected match %s", d.RuleID)
					}
				}
			})
		}
	}
}

func BenchmarkParse(b *testing.B) {
	p := benchPolicy(b, 100)
	doc, _ := json.Marshal(p.Document())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.json", doc); err != nil {
			b.Fatal(err)
		}
	}
}
