package claudecode

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// Claude Code writes each session's conversation to a transcript, one JSON
// object a line (the transcript_path of every hook event; observed on
// 2.1.332): an assistant line holds the tool_use blocks the model sent, and
// a user line the tool_result the model saw of each, with the permission
// flow's decision beside it:
//
//	{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{...}}]},...}
//	{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"...","is_error":false}]},
//	 "toolUseResult":{...},"permissionDecision":{"decision":"accept","source":"hook"},...}
//
// decision "accept" means the call went on to run (and ran, or failed
// running); "reject" that a hook, the prompt tool or a rule refused it.
// The CLI writes lines in batches, a moment after the fact, and flushes the
// rest when it exits.

// ToolResult is one tool_result of a transcript, with the call it answers.
type ToolResult struct {
	ToolUseID string
	ToolName  string          // from the tool_use, when the transcript holds it
	Input     json.RawMessage // likewise
	Text      string          // what the model saw
	IsError   bool
	// Decision is the permission flow's: "accept" (the call ran), "reject",
	// or "" when the CLI did not say.
	Decision string
	// Entry is the uuid of the transcript entry that holds the result:
	// the same result read (or sent) again has the same one.
	Entry string
}

// Ran reports whether the call ran (or ran and failed).
func (r ToolResult) Ran() bool { return r.Decision == "accept" }

// Transcript reads a transcript line by line, remembering the tool_use
// blocks it has seen so that each tool_result comes with its call. Its
// zero value is ready.
type Transcript struct {
	uses map[string]toolUse // tool_use blocks by id, until answered
}

type toolUse struct {
	name  string
	input json.RawMessage
}

// Line reads one line and returns the tool results it holds. A line that
// is not a transcript entry is skipped.
func (t *Transcript) Line(line []byte) []ToolResult {
	if !gjson.ValidBytes(line) {
		return nil
	}
	entry := gjson.ParseBytes(line)
	content := entry.Get("message.content")
	if !content.IsArray() {
		return nil
	}
	switch entry.Get("type").Str {
	case "assistant":
		content.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_use" && b.Get("id").Str != "" {
				if t.uses == nil {
					t.uses = map[string]toolUse{}
				}
				u := toolUse{name: b.Get("name").Str}
				if in := b.Get("input"); in.IsObject() {
					u.input = json.RawMessage(in.Raw)
				}
				t.uses[b.Get("id").Str] = u
			}
			return true
		})
	case "user":
		var out []ToolResult
		decision, uuid := entry.Get("permissionDecision.decision").Str, entry.Get("uuid").Str
		content.ForEach(func(_, b gjson.Result) bool {
			id := b.Get("tool_use_id").Str
			if b.Get("type").Str != "tool_result" || id == "" {
				return true
			}
			r := ToolResult{ToolUseID: id, Text: resultText(b.Get("content")), IsError: b.Get("is_error").Bool(), Decision: decision, Entry: uuid}
			if use, ok := t.uses[id]; ok {
				r.ToolName, r.Input = use.name, use.input
				delete(t.uses, id)
			}
			out = append(out, r)
			return true
		})
		return out
	}
	return nil
}

// resultText is a tool_result's content as the model read it: the string,
// or the text of its blocks.
func resultText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var parts []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "text" {
			parts = append(parts, b.Get("text").Str)
		} else if typ := b.Get("type").Str; typ != "" {
			parts = append(parts, "["+typ+"]")
		}
		return true
	})
	return strings.Join(parts, "\n")
}
