package ledger

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/schematest"
)

// The documents the ledger stores are the design article's, exactly as their
// embedded schemas describe them (additionalProperties false): approval
// records, decisions (a person's allow and deny, an expiry, a hand-off)
// and write-backs (by a rule and by the default).
func TestStoredDocumentsMatchTheirSchemas(t *testing.T) {
	c := newClock()
	l, _ := openTest(t, c)
	approve, deny := ask(t, l, "toolu_1", time.Minute), ask(t, l, "toolu_2", time.Minute)
	ask(t, l, "toolu_3", time.Minute) // expires
	mustPropose(t, l, "toolu_4", `{"file_path":".env"}`)
	handOff, _, err := l.CreateApproval(ctx, "toolu_4", ApprovalRequest{PolicyVersion: 1, Timeout: time.Hour, HandOff: true})
	if err != nil {
		t.Fatal(err)
	}
	mustResolve(t, l, approve.ID, api.EffectAllow)
	mustResolve(t, l, deny.ID, api.EffectDeny)
	if _, _, err := l.HandOff(ctx, handOff.ID, api.ActorHookGone); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if _, err := l.ExpireDue(ctx, c.Now()); err != nil {
		t.Fatal(err)
	}
	for _, w := range []api.WriteBack{{ToolUseID: "toolu_1", Effect: api.EffectAllow, RuleID: "ask-push", WroteBack: true},
		{ToolUseID: "toolu_2", Effect: api.EffectDeny, ReasonCode: "default", WroteBack: true}} {
		if _, err := l.RecordWriteBack(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{}
	for prefix, name := range map[string]string{"a/": api.SchemaApproval, "d/": api.SchemaDecision, "w/": api.SchemaWriteBack} {
		err := l.store.Scan(ctx, prefix, prefix, func(_, val []byte) error {
			counts[prefix]++
			schematest.Validate(t, name, val)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if counts["a/"] != 4 || counts["d/"] != 4 || counts["w/"] != 3 {
		t.Fatalf("validated %v documents, want 4 approvals, 4 decisions, 3 write-backs", counts)
	}
	checkApprovalBeyondTheArticle(t, l)
}

// checkApprovalBeyondTheArticle holds the records to what toolgate promises
// beyond the design article's schema: an apr_ ULID id, matched_rule always present
// (null for the default), and the policy's version.
func checkApprovalBeyondTheArticle(t *testing.T, l *Ledger) {
	id := regexp.MustCompile(`^apr_[0-9A-HJKMNP-TV-Z]{26}$`)
	l.store.Scan(ctx, "a/", "a/", func(_, val []byte) error {
		var a map[string]json.RawMessage
		json.Unmarshal(val, &a)
		var s string
		json.Unmarshal(a["id"], &s)
		if _, ok := a["matched_rule"]; !ok || !id.MatchString(s) || a["policy_version"] == nil {
			t.Errorf("record %s: want an apr_ ULID, matched_rule (null for the default) and policy_version", val)
		}
		return nil
	})
}

func mustResolve(t *testing.T, l *Ledger, id string, decision api.Effect) {
	t.Helper()
	if _, _, err := l.Resolve(ctx, api.Decision{ApprovalID: id, Decision: decision, Actor: "user:alice", ReasonCode: "needs_review"}); err != nil {
		t.Fatal(err)
	}
}

// Decisions stored before the design article's values read as today's: approved is
// allow, denied is deny, expired is deny, or ask when handed to Claude
// Code's dialog; a refused decision's error carries the same.
func TestDecisionsOfTheEarlierShape(t *testing.T) {
	l, _ := openTest(t, nil)
	old := map[string]string{"approved": "", "denied": "", "expired": api.ReasonApprovalExpired}
	want := map[string]api.Effect{"approved": api.EffectAllow, "denied": api.EffectDeny, "expired": api.EffectDeny, "handed": api.EffectAsk}
	old["handed"] = api.ReasonHandedToClaude
	for name, reason := range old {
		a := ask(t, l, "toolu_"+name, time.Minute)
		status, decision := name, name
		if name == "handed" {
			status, decision = api.StatusExpired, api.StatusExpired
		}
		if reason == "" {
			reason = "needs_review"
		}
		raw := json.RawMessage(`{"approval_id":"` + a.ID + `","tool_use_id":"toolu_` + name + `","decision":"` + decision +
			`","actor":"user:alice","reason_code":"` + reason + `","decided_at":"2026-11-30T12:00:00Z"}`)
		a.Status = status
		_, err := write(ctx, l, func(t *tx) (struct{}, error) {
			if err := t.Delete(pendingKey(a)); err != nil {
				return struct{}{}, err
			}
			if err := t.Put(approvalKey(a.ID), a); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, t.Put(decisionKey(a.ID), raw)
		})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := l.DecisionFor(ctx, a.ID); err != nil || d.Decision != want[name] {
			t.Errorf("%s: read as %+v %v, want decision %s", name, d, err, want[name])
		}
		_, _, err = l.Resolve(ctx, api.Decision{ApprovalID: a.ID, Decision: api.EffectAllow, Actor: "user:bob", ReasonCode: "x"})
		var te *TerminalError
		if !errors.As(err, &te) || te.Decision.Decision != want[name] {
			t.Errorf("%s: a refused decision carries %v", name, err)
		}
	}
}
