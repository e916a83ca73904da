package install

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite examples/settings/toolgate-hooks.json")

// The settings snippet for manual installs is exactly what toolgate install
// writes into an empty file, so that it never drifts from it.
func TestSettingsExample(t *testing.T) {
	const path = "../examples/settings/toolgate-hooks.json"
	o := Options{Hook: "/usr/local/bin/toolgate-hook", Policy: "/home/you/.config/toolgate/policy.json",
		ApprovalTimeout: 5 * time.Minute, PermissionMargin: 15 * time.Second}
	out, _, err := Add([]byte(`{}`), o)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	json.Indent(&want, out, "", "  ")
	want.WriteByte('\n')
	if *update {
		os.WriteFile(path, want.Bytes(), 0o644)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s is not what toolgate install writes (go test ./install -update rewrites it): %v\n%s", path, err, want.String())
	}
}
