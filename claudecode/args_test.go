package claudecode

import (
	"strings"
	"testing"
)

func TestCheckClaudeArgs(t *testing.T) {
	for _, args := range [][]string{
		{"-p", "--permission-prompt-tool", "x"},
		{"--permission-mode", "bypassPermissions"},
		{"--permission-mode=dontAsk"},
		{"--dangerously-skip-permissions"},
		{"--permission-prompts", "none"},
		{"-p", "--settings", "my-settings.json", "hi"},
		{"--settings={\"model\":\"x\"}"},
	} {
		if err := CheckArgs(args); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
	for _, args := range [][]string{
		{"-p", "--permission-mode", "acceptEdits", "hi"},
		{"-p", "--", "--dangerously-skip-permissions"}, // a prompt, after --
	} {
		if err := CheckArgs(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	values, strict := MCPConfigArgs([]string{"-p", "--mcp-config", "a.json", "{\"mcpServers\":{}}", "--strict-mcp-config", "--mcp-config=b.json", "hi"})
	if strings.Join(values, "|") != "a.json|{\"mcpServers\":{}}|b.json" || !strict {
		t.Errorf("mcp configs %q strict=%v", values, strict)
	}
}

func TestExpandVars(t *testing.T) {
	env := []string{"TOKEN=old", "HOME=/home/u", "TOKEN=abc", "EMPTY="}
	for in, want := range map[string]string{
		"Bearer ${TOKEN}":         "Bearer abc",
		"${HOME}/x:${HOME}":       "/home/u/x:/home/u",
		"${NOPE:-fallback}":       "fallback",
		"${EMPTY:-fallback}":      "fallback",
		"${NOPE}":                 "",
		"$TOKEN stays":            "$TOKEN stays",
		"${not closed":            "${not closed",
		"${1BAD}":                 "${1BAD}",
		"${A-B}":                  "${A-B}",
		"a ${TOKEN:-x} b ${NOPE}": "a abc b ",
	} {
		if got := ExpandVars(in, env); got != want {
			t.Errorf("ExpandVars(%q) = %q, want %q", in, got, want)
		}
	}
}
