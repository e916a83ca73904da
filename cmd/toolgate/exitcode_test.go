package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

func TestExitCode(t *testing.T) {
	_, invalid := policy.Parse("p.json", []byte(`{"version":1,"default":"maybe","rules":[]}`))
	if invalid == nil {
		t.Fatal("the invalid policy parsed")
	}
	_, missing := os.Open("/no/such/file")
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string // "" means nothing is printed
	}{
		{"success", nil, 0, ""},
		{"already shown", &exitStatus{77}, 77, ""},
		{"already shown, wrapped", fmt.Errorf("run: %w", &exitStatus{75}), 75, ""},
		{"usage", usagef("unknown command %q", "frob"), 64, "toolgate: unknown command \"frob\"\nTry: toolgate --help\n"},
		{"invalid policy", invalid, 78, "toolgate: "},
		{"bad data", &dataError{errors.New("call is not JSON")}, 65, "toolgate: call is not JSON\n"},
		{"gate unavailable", &gateUnavailable{errors.New("no daemon")}, 69, "toolgate: no daemon\n"},
		{"self-approval", &permissionError{errors.New("refused")}, 77, "toolgate: refused\n"},
		{"already expired", &conflictError{errors.New("expired"), true}, 75, "toolgate: expired\n"},
		{"already decided", &conflictError{errors.New("decided"), false}, 79, "toolgate: decided\n"},
		{"a policy loosens", &loosenedError{"new.json loosens"}, 80, "toolgate: new.json loosens\n"},
		{"missing file", missing, 66, "toolgate: open /no/such/file"},
		{"unreadable file", fmt.Errorf("read: %w", fs.ErrPermission), 66, "toolgate: read: permission denied\n"},
		{"interrupted", fmt.Errorf("wait: %w", context.Canceled), 130, "toolgate: wait: context canceled\n"},
		{"anything else", errors.New("boom"), 1, "toolgate: boom\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := exitCode(tt.err, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if got := stderr.String(); tt.stderr == "" && got != "" || !bytes.HasPrefix(stderr.Bytes(), []byte(tt.stderr)) {
				t.Errorf("stderr %q, want it to start with %q", got, tt.stderr)
			}
		})
	}
}
