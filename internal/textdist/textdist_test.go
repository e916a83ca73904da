package textdist

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"policy", "report", "approval-timeout", "file_path"}
	for typed, want := range map[string]string{"polcy": "policy", "reprot": "report", "approval-timout": "approval-timeout",
		"filepath": "file_path", "x": "", "zzzzzz": ""} {
		if got := Closest(typed, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", typed, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
