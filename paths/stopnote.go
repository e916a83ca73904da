package paths

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// StopNote is what a daemon that stopped on its own because it could no
// longer serve (its ledger's directory removed, replaced, read-only or
// full; its runtime directory gone) leaves behind, so that toolgate run
// ends its session with the reason instead of starting another daemon on
// a ledger the session was never recorded in, and daemon status can say
// why no daemon runs. It is written to the runtime and the state
// directory, wherever it can be.
type StopNote struct {
	PID    int       `json:"pid"`
	Ledger string    `json:"ledger"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// stopNoteName is the stop note's file name in each directory.
const stopNoteName = "daemon-stopped.json"

// StopNoteFiles are where a daemon serving p leaves its stop note.
func (p Paths) StopNoteFiles() []string {
	return []string{filepath.Join(p.RuntimeDir, stopNoteName), filepath.Join(p.StateDir, stopNoteName)}
}

// WriteStopNote writes n to every place of p's that takes it (none may:
// the directories may be gone), and says how many did.
func WriteStopNote(p Paths, n StopNote) int {
	data, err := json.Marshal(n)
	if err != nil {
		return 0
	}
	written := 0
	for _, path := range p.StopNoteFiles() {
		f, _, err := OpenRegular(path, syscall.O_NOFOLLOW|os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			continue
		}
		_, err = f.Write(append(data, '\n'))
		if cerr := f.Close(); err == nil && cerr == nil {
			written++
		}
	}
	return written
}

// ReadStopNote reads the newest stop note of p's, or returns false when
// there is none (or none that reads).
func ReadStopNote(p Paths) (StopNote, bool) {
	var newest StopNote
	for _, path := range p.StopNoteFiles() {
		n, err := readStopNote(path)
		if err == nil && n.At.After(newest.At) {
			newest = n
		}
	}
	return newest, newest.PID != 0
}

// StopNoteOf reads the stop note the daemon pid left, if it left one.
func StopNoteOf(p Paths, pid int) (StopNote, bool) {
	for _, path := range p.StopNoteFiles() {
		if n, err := readStopNote(path); err == nil && n.PID == pid {
			return n, true
		}
	}
	return StopNote{}, false
}

func readStopNote(path string) (StopNote, error) {
	f, _, err := OpenRegular(path, syscall.O_NOFOLLOW|os.O_RDONLY)
	if err != nil {
		return StopNote{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return StopNote{}, err
	}
	var n StopNote
	if err := json.Unmarshal(data, &n); err != nil {
		return StopNote{}, fmt.Errorf("%s: %w", path, err)
	}
	if n.PID <= 0 || n.Reason == "" {
		return StopNote{}, errors.New(path + ": not a stop note")
	}
	return n, nil
}

// ClearStopNotes removes p's stop notes: a daemon that starts serving
// clears what the last one left.
func ClearStopNotes(p Paths) {
	for _, path := range p.StopNoteFiles() {
		os.Remove(path)
	}
}
