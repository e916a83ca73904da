package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// FuzzParse feeds arbitrary bytes to the loader: it must never panic, must
// fail only with LoadErrors, and a document it accepts must decide any call
// without panicking.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "examples", "policies", "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"version":1,"default":"ask","rules":[],}`))
	f.Add([]byte(`{"version":1,"default":"ask","rules":[{"id":"a","effect":"ask","tool":"*","input":{"a.b":{"pattern":"(x"}}}]}`))
	f.Add([]byte(`{"version":1,"default":"deny","rules":[],"schemas":{"T":{"$ref":"#/$defs/x","$defs":{"x":{"type":"object"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.json", data)
		if err != nil {
			var es LoadErrors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is not LoadErrors: %#v", err)
			}
			return
		}
		for _, c := range []Call{
			{Tool: "Bash", Input: []byte(`{"command":"rm -rf / && git push"}`), Cwd: "/p"},
			{Tool: "Read", Input: []byte(`{"file_path":"../.env"}`), Cwd: "/p", Home: "/h"},
			{Tool: "mcp__github__create_pull_request", Input: []byte(`{"base":"main"}`)},
		} {
			d := p.Decide(c)
			if d.Effect != api.EffectAllow && d.Effect != api.EffectAsk && d.Effect != api.EffectDeny {
				t.Fatalf("effect %q", d.Effect)
			}
			p.Explain(c)
			_ = p.Validate(c.Tool, c.Input, nil)
		}
	})
}

// FuzzCommand feeds arbitrary shell text to the Bash matcher and checks that
// allow and deny agree: a script that an allow of echo accepts consists of
// echo commands only, so a deny of echo must catch it and a deny of rm must
// not.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"git status && rm -rf /", "echo hi", "echo $(rm x)", "bash -c 'echo x; rm y'", "sudo -u r rm x",
		"echo a | xargs rm", "find . -exec rm {} \\;", "eval 'echo; rm'", "{rm,x}", "r\\m x", "echo > f",
		"f() { rm x; }; echo", "echo <(rm x)", "X=1 echo", "echo 'unterminated", "((x=1)) && echo", "echo\nrm x",
	} {
		f.Add(s)
	}
	allowEcho := mustParse(f, `{"version":1,"default":"ask","rules":[
		{"id":"allow-echo","effect":"allow","tool":"Bash","input":{"command":{"command":[["echo"]]}}}]}`)
	denyEcho := mustParse(f, `{"version":1,"default":"allow","rules":[
		{"id":"deny-echo","effect":"deny","tool":"Bash","input":{"command":{"command":[["echo"]]}},"reason_code":"x"}]}`)
	denyRm := mustParse(f, `{"version":1,"default":"allow","rules":[
		{"id":"deny-rm","effect":"deny","tool":"Bash","input":{"command":{"command":[["rm"]]}},"reason_code":"x"}]}`)
	f.Fuzz(func(t *testing.T, command string) {
		input := []byte(jsonString(command))
		c := Call{Tool: "Bash", Input: input, Cwd: "/p"}
		if allowEcho.Decide(c).Effect != api.EffectAllow {
			return
		}
		if denyEcho.Decide(c).Effect != api.EffectDeny {
			t.Errorf("%q: allowed as echo, but a deny of echo misses it", command)
		}
		if denyRm.Decide(c).Effect == api.EffectDeny {
			t.Errorf("%q: allowed as echo, but a deny of rm catches it", command)
		}
	})
}
