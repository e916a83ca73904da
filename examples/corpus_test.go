package examples

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/policy"
)

// A corpusEntry is one command line of the corpus and the kind of harm or
// work it stands for.
type corpusEntry struct {
	Class   string `json:"class"`
	Command string `json:"command"`
}

func readCorpus(t *testing.T, name string) []corpusEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		var e corpusEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Command == "" || e.Class == "" {
			t.Fatalf("corpus/%s:%d: want {\"class\", \"command\"}: %v", name, n, err)
		}
		out = append(out, e)
	}
	return out
}

// verdicts decides every entry with a shipped policy as a live session
// would: the project is a directory in the home, the guard included.
func verdicts(t *testing.T, profile string, entries []corpusEntry) []api.Verdict {
	t.Helper()
	data, err := Policies.ReadFile(Profiles[profile])
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(Profiles[profile], data)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	project := filepath.Join(home, "project")
	s := policy.NewSession(p, nil, project, home)
	s.Guard = policy.NewGuard(policy.GuardPaths{ConfigDir: filepath.Join(home, ".config", "toolgate"),
		ClaudeDir: filepath.Join(home, ".claude"), Project: project})
	out := make([]api.Verdict, len(entries))
	for i, e := range entries {
		in, _ := json.Marshal(map[string]string{"command": e.Command})
		out[i] = s.Evaluate("Bash", in)
	}
	return out
}

type tally struct{ allow, ask, deny int }

func count(vs []api.Verdict) (t tally) {
	for _, v := range vs {
		switch v.Effect {
		case api.EffectAllow:
			t.allow++
		case api.EffectAsk:
			t.ask++
		default:
			t.deny++
		}
	}
	return t
}

// The shipped policies on the corpus of destructive and everyday command
// lines: neither lets a destructive one through; the laptop policy denies
// at least 80% of them outright, and allows at least 75% of the everyday
// ones and denies none. The figures are logged;
// scripts/corpus prints them beside cc-safety-net's.
func TestShippedPoliciesOnTheCorpus(t *testing.T) {
	bad, good := readCorpus(t, "destructive.jsonl"), readCorpus(t, "everyday.jsonl")
	if len(bad) < 120 || len(good) < 80 {
		t.Fatalf("the corpus has %d destructive and %d everyday commands; it needs at least 120 and 80", len(bad), len(good))
	}
	if ccsn := os.Getenv("TOOLGATE_CCSN"); ccsn != "" {
		b, g := count(ccsnVerdicts(t, ccsn, bad)), count(ccsnVerdicts(t, ccsn, good))
		t.Logf("cc-safety-net: destructive %d: deny %d ask %d allow %d; everyday %d: deny %d ask %d allow %d",
			len(bad), b.deny, b.ask, b.allow, len(good), g.deny, g.ask, g.allow)
	}
	for _, profile := range []string{"laptop", "ci"} {
		bv, gv := verdicts(t, profile, bad), verdicts(t, profile, good)
		b, g := count(bv), count(gv)
		t.Logf("%s: destructive %d: deny %d ask %d allow %d; everyday %d: deny %d ask %d allow %d", profile,
			len(bad), b.deny, b.ask, b.allow, len(good), g.deny, g.ask, g.allow)
		for i, v := range bv {
			if v.Effect == api.EffectAllow {
				t.Errorf("%s allows the destructive %q (%s)", profile, bad[i].Command, bad[i].Class)
			}
		}
		if profile != "laptop" {
			continue
		}
		for i, v := range gv {
			if v.Effect == api.EffectDeny {
				t.Errorf("laptop denies the everyday %q by %s", good[i].Command, v.RuleID)
			}
		}
		if b.deny*100 < 80*len(bad) {
			t.Errorf("laptop denies %d of %d destructive commands outright, under 80%%", b.deny, len(bad))
		}
		if g.allow*100 < 75*len(good) {
			t.Errorf("laptop allows %d of %d everyday commands, under 75%%", g.allow, len(good))
		}
		if testing.Verbose() {
			var lines []string
			for i, v := range bv {
				if v.Effect != api.EffectDeny {
					lines = append(lines, fmt.Sprintf("  destructive %-5s %-21s %q", v.Effect, bad[i].Class, bad[i].Command))
				}
			}
			for i, v := range gv {
				if v.Effect != api.EffectAllow {
					lines = append(lines, fmt.Sprintf("  everyday    %-5s %-21s %q", v.Effect, good[i].Class, good[i].Command))
				}
			}
			sort.Strings(lines)
			t.Log("not decided as their kind:\n" + strings.Join(lines, "\n"))
		}
	}
}

// ccsnVerdicts decides every entry with cc-safety-net's Claude Code hook
// (TOOLGATE_CCSN, installed by scripts/corpus): deny when it says deny,
// allow otherwise (it has no ask).
func ccsnVerdicts(t *testing.T, bin string, entries []corpusEntry) []api.Verdict {
	t.Helper()
	project := t.TempDir()
	out := make([]api.Verdict, len(entries))
	for i, e := range entries {
		in, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]string{"command": e.Command}, "session_id": "corpus", "cwd": project,
			"transcript_path": filepath.Join(project, "t.jsonl")})
		cmd := exec.Command(bin, "hook", "--claude-code")
		cmd.Dir, cmd.Stdin = project, bytes.NewReader(in)
		cmd.Env = append(os.Environ(), "HOME="+project) // its own rules and log, none of the user's
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("cc-safety-net on %q: %v", e.Command, err)
		}
		out[i].Effect = api.EffectAllow
		if gjsonDeny(got) {
			out[i].Effect = api.EffectDeny
		}
	}
	return out
}

func gjsonDeny(hookOut []byte) bool {
	var v struct {
		HookSpecificOutput struct {
			PermissionDecision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	return json.Unmarshal(hookOut, &v) == nil && v.HookSpecificOutput.PermissionDecision == "deny"
}
