package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/gatetest"
	"github.com/toolgate/toolgate/internal/schematest"
	"github.com/toolgate/toolgate/paths"
)

// useGate points the CLI at a real daemon started for the test.
func useGate(t *testing.T) paths.Paths {
	t.Helper()
	p := gatetest.Daemon(t)
	t.Setenv("TOOLGATE_RUNTIME_DIR", p.RuntimeDir)
	t.Setenv("TOOLGATE_STATE_DIR", p.StateDir)
	return p
}

// register registers a session of policy doc whose asks wait up to
// timeout, run by a supervisor that is not the test.
func register(t *testing.T, p paths.Paths, doc string, timeout time.Duration, cwd string) string {
	t.Helper()
	s, err := client.NewClient(p.Socket()).Register(context.Background(), api.RegisterRequest{Policy: json.RawMessage(doc),
		PolicyName: "p.json", SupervisorPID: gatetest.Supervisor(t), ApprovalTimeout: api.Duration(timeout), Cwd: cwd, Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

const documentsPolicy = `{"version":2,"default":"ask","rules":[
	{"id":"deny-env","effect":"deny","tool":"Read","input":{"file_path":{"const":".env"}},"reason_code":"secret_file"},
	{"id":"ask-push","effect":"ask","tool":"Bash","input":{"command":{"prefix":"git push"}},"reason_code":"publishes_code"},
	{"id":"allow-ls","effect":"allow","tool":"Bash","input":{"command":{"const":"ls"}}}]}`

// prompt proposes one call as Claude Code does (its PreToolUse hook, then
// the permission prompt) and returns the prompt's verdict.
func prompt(t *testing.T, p paths.Paths, session, id, tool, input string) api.Verdict {
	t.Helper()
	c := client.NewClient(p.Socket())
	event := `{"hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"` + id + `"}`
	if _, err := c.Hook(context.Background(), api.HookRequest{SessionID: session, Event: json.RawMessage(event)}); err != nil {
		t.Fatalf("PreToolUse: %v", err)
	}
	v, err := c.Prompt(context.Background(), api.PromptRequest{SessionID: session, ToolUseID: id,
		ToolName: tool, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// What pending --json, show --json and audit export emit is the approval flow's
// documents exactly as their schemas describe them: an approval record
// pending, approved, denied and expired (by a rule and by the default),
// each decision, and the write-backs of allows and denies by a rule, by
// the default, by a person and by the expiry.
func TestEmittedDocumentsMatchTheirSchemas(t *testing.T) {
	p := useGate(t)
	s := register(t, p, documentsPolicy, time.Hour, "/project")
	approve := prompt(t, p, s, "toolu_approve", "Bash", `{"command":"git push origin main"}`)
	deny := prompt(t, p, s, "toolu_deny", "Read", `{"file_path":"notes.md"}`) // the default asks
	prompt(t, p, s, "toolu_allow", "Bash", `{"command":"ls"}`)
	prompt(t, p, s, "toolu_env", "Read", `{"file_path":".env"}`)

	code, out, errOut := run(t, "", "pending", "--json")
	if code != 0 {
		t.Fatalf("pending --json: %d %s", code, errOut)
	}
	if n := validateDetails(t, out, "approvals"); n != 2 {
		t.Errorf("pending --json listed %d approvals, want 2:\n%s", n, out)
	}
	decideByCLI(t, p, "approve", approve.ApprovalID)
	decideByCLI(t, p, "deny", deny.ApprovalID)
	expiring := register(t, p, documentsPolicy, 10*time.Millisecond, "/project")
	expired := prompt(t, p, expiring, "toolu_expire", "Bash", `{"command":"git push"}`)
	if v, err := client.NewClient(p.Socket()).Wait(context.Background(), expired.ApprovalID); err != nil || v.ReasonCode != api.ReasonApprovalExpired {
		t.Fatalf("wait for the expiry: %+v %v", v, err)
	}
	for _, id := range []string{approve.ApprovalID, deny.ApprovalID, expired.ApprovalID} {
		code, out, errOut := run(t, "", "show", "--json", id)
		if code != 0 {
			t.Fatalf("show --json %s: %d %s", id, code, errOut)
		}
		validateDetail(t, []byte(out), true)
	}
	validateExport(t)
}

// decideByCLI decides an approval with the CLI, and waits for its write-back
// as toolgate run does.
func decideByCLI(t *testing.T, p paths.Paths, verb, id string) {
	t.Helper()
	if code, _, errOut := run(t, "", verb, id); code != 0 {
		t.Fatalf("%s %s: %d %s", verb, id, code, errOut)
	}
	if _, err := client.NewClient(p.Socket()).Wait(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// validateDetails validates every approval detail listed under key and
// returns how many there were; the envelope holds nothing else.
func validateDetails(t *testing.T, out, key string) int {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatal(err)
	}
	if len(env) != 2 || string(env["schema_version"]) != "1" {
		t.Errorf("envelope: want exactly schema_version 1 and %s: %s", key, out)
	}
	var list []json.RawMessage
	json.Unmarshal(env[key], &list)
	for _, d := range list {
		validateDetail(t, d, false)
	}
	return len(list)
}

// validateDetail validates an approval detail: the record, the decision
// and the write-back each by its schema, and no other member than
// reason_code (and schema_version, for show).
func validateDetail(t *testing.T, raw []byte, decided bool) {
	t.Helper()
	var d map[string]json.RawMessage
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	for k, v := range d {
		switch k {
		case "approval":
			schematest.Validate(t, api.SchemaApproval, v)
		case "decision":
			schematest.Validate(t, api.SchemaDecision, v)
		case "write_back":
			schematest.Validate(t, api.SchemaWriteBack, v)
		case "reason_code", "schema_version":
		default:
			t.Errorf("an approval detail has a member %q no schema describes: %s", k, raw)
		}
	}
	if decided && (d["decision"] == nil || d["write_back"] == nil) {
		t.Errorf("a decided approval lacks its decision or write-back: %s", raw)
	}
}

// validateExport validates the documents the audit chain carries: every
// approval_created, approval_decided and write_back event's data.
func validateExport(t *testing.T) {
	t.Helper()
	code, out, errOut := run(t, "", "audit", "export")
	if code != 0 {
		t.Fatalf("audit export: %d %s", code, errOut)
	}
	kinds := map[string]string{"approval_created": api.SchemaApproval, "approval_decided": api.SchemaDecision, "write_back": api.SchemaWriteBack}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if name, ok := kinds[e.Kind]; ok {
			seen[e.Kind]++
			schematest.Validate(t, name, e.Data)
		}
	}
	// 3 approvals, each decided; write-backs: the allow and the deny by
	// rule, the person's allow and deny, the expiry's deny.
	if seen["approval_created"] != 3 || seen["approval_decided"] != 3 || seen["write_back"] != 5 {
		t.Errorf("the export carried %v", seen)
	}
}
