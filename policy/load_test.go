package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error, in order
	}{
		{"trailing comma", "{\"version\":1,\"default\":\"ask\",\n\"rules\":[],}", []string{"test.json:2:12:", "invalid JSON", "no trailing commas"}},
		{"comment", "{\"version\":1,\n// no\n\"default\":\"ask\",\"rules\":[]}", []string{"test.json:2:1:", "no comments"}},
		{"truncated", `{"version":1,"default":"ask","rules":[`, []string{"invalid JSON"}},
		{"unknown top-level field", `{"version":1,"default":"ask","rules":[],"extra":1}`, []string{"test.json:1:1:", "extra"}},
		{"unknown rule field", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"ask","tool":"Bash","when":1}]}`,
			[]string{`test.json:1:39: rule "r1":`, "when"}},
		{"unknown effect", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"maybe","tool":"Bash"}]}`,
			[]string{`rule "r1": rules/0/effect`}},
		{"unknown condition", "{\"version\":1,\"default\":\"ask\",\"rules\":[\n {\"id\":\"r1\",\"effect\":\"ask\",\"tool\":\"Bash\",\"input\":{\"command\":{\"glob\":\"x\"}}}]}",
			[]string{`test.json:2:61: rule "r1":`, "glob"}},
		{"empty condition", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"ask","tool":"Bash","input":{"command":{}}}]}`,
			[]string{`rule "r1"`}},
		{"bad regex", "{\"version\":1,\"default\":\"ask\",\"rules\":[\n{\"id\":\"r1\",\"effect\":\"ask\",\"tool\":\"Bash\",\n \"input\":{\"command\":{\"pattern\":\"(\"}}}]}",
			[]string{`test.json:3:21: rule "r1": input "command": pattern does not compile`}},
		{"duplicate rule id", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"ask","tool":"A"},{"id":"r1","effect":"ask","tool":"B"}]}`,
			[]string{`test.json:1:83: rule "r1": duplicate rule id`}},
		{"duplicate key", `{"version":1,"default":"ask","default":"allow","rules":[]}`, []string{"test.json:1:30:", `duplicate key "default"`}},
		{"deny without reason_code", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"deny","tool":"A"}]}`,
			[]string{`rule "r1"`, "reason_code"}},
		{"missing default", `{"version":1,"rules":[]}`, []string{"default"}},
		{"version zero", `{"version":0,"default":"ask","rules":[]}`, []string{"version"}},
		{"schema that does not compile", `{"version":1,"default":"ask","rules":[],"schemas":{"T":{"type":"nope"}}}`,
			[]string{"schema for T does not compile"}},
		{"schema with external ref", `{"version":1,"default":"ask","rules":[],"schemas":{"T":{"$ref":"file:///etc/passwd"}}}`,
			[]string{"schema for T does not compile"}},
		{"failing inline test", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"allow","tool":"A"}],
			"tests":[{"name":"A is denied","call":{"name":"A","input":{}},"expect":"deny"}]}`,
			[]string{`test "A is denied": expected deny, got allow by rule "r1"`}},
		{"inline test names the wrong rule", `{"version":1,"default":"ask","rules":[{"id":"r1","effect":"allow","tool":"A"}],
			"tests":[{"name":"t","call":{"name":"A","input":{}},"expect":"allow","rule":null}]}`,
			[]string{`expected allow by the default, got allow by rule "r1"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.json", []byte(tt.doc))
			if err == nil {
				t.Fatal("loaded an invalid document")
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q lacks %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	doc := `{"version":1,"default":"ask","rules":[
		{"id":"a","effect":"ask","tool":"X","input":{"k":{"pattern":"("}}},
		{"id":"b","effect":"ask","tool":"X","input":{"k":{"pattern":"["}}}]}`
	_, err := Parse("p.json", []byte(doc))
	es, ok := err.(LoadErrors)
	if !ok || len(es) != 2 {
		t.Fatalf("want 2 errors, got %v", err)
	}
	if es[0].RuleID != "a" || es[1].RuleID != "b" || es[0].Line != 2 || es[1].Line != 3 {
		t.Errorf("errors out of place: %q", err)
	}
}

func TestSHA256IsOfTheBytes(t *testing.T) {
	a := mustParse(t, `{"version":1,"default":"ask","rules":[]}`)
	b := mustParse(t, `{"version":1, "default":"ask","rules":[]}`)
	if a.SHA256 == b.SHA256 {
		t.Error("different bytes, same sha256")
	}
	// sha256sum of the exact bytes, computed outside Go.
	if want := "1a9e6a39f7b5fbd2673004304560ea14dde5b475f179a602a861afc929fc9ba3"; a.SHA256 != want {
		t.Errorf("sha256 = %s, want %s", a.SHA256, want)
	}
}

func TestToolSchemas(t *testing.T) {
	p := mustParse(t, `{"version":1,"default":"allow","rules":[],"schemas":{
		"mcp__gh__create_pull_request":{"type":"object","required":["base","title"],"additionalProperties":false,
			"properties":{"base":{"type":"string"},"title":{"type":"string","minLength":1},"draft":{"type":"boolean"}}}}}`)
	discovered, err := CompileSchemas(map[string]json.RawMessage{
		"mcp__gh__create_pull_request": []byte(`{"type":"object"}`),
		"mcp__docs__search":            []byte(`{"type":"object","required":["q"]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, input, pointer string
		ok                   bool
	}{
		{"mcp__gh__create_pull_request", `{"base":"main","title":"T"}`, "", true},
		{"mcp__gh__create_pull_request", `{"base":"main"}`, "", false},
		{"mcp__gh__create_pull_request", `{"base":"main","title":""}`, "/title", false},
		{"mcp__gh__create_pull_request", `{"base":1,"title":"T"}`, "/base", false},
		{"mcp__gh__create_pull_request", `{"base":"main","title":"T","x":1}`, "", false},
		{"mcp__docs__search", `{}`, "", false},
		{"mcp__docs__search", `{"q":"x"}`, "", true},
		{"Bash", `{"anything":1}`, "", true},
	}
	for _, tt := range tests {
		err := p.Validate(tt.tool, []byte(tt.input), discovered)
		if (err == nil) != tt.ok {
			t.Errorf("%s %s: err = %v, want ok=%v", tt.tool, tt.input, err, tt.ok)
			continue
		}
		if se, isSchema := err.(*SchemaError); err != nil && (!isSchema || se.Pointer != tt.pointer) {
			t.Errorf("%s %s: got %#v, want pointer %q", tt.tool, tt.input, err, tt.pointer)
		}
	}
}
