package paths

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// liveWorld is a ledger whose daemon record names a runtime directory
// with a socket in it, and the paths a client derives from another
// environment.
type liveWorld struct {
	client Paths  // what the client's environment names
	daemon string // the daemon's runtime directory
}

func newLiveWorld(t *testing.T) liveWorld {
	t.Helper()
	root := t.TempDir()
	w := liveWorld{client: Paths{RuntimeDir: filepath.Join(root, "elsewhere"), StateDir: filepath.Join(root, "state")},
		daemon: filepath.Join(root, "rt")}
	if err := os.MkdirAll(w.client.LedgerDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.daemon, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(w.daemon, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(filepath.Join(w.daemon, SocketName), 0o600)
	w.record(t, DaemonRecord{PID: os.Getpid(), RuntimeDir: w.daemon})
	return w
}

func (w liveWorld) record(t *testing.T, rec DaemonRecord) {
	t.Helper()
	data, _ := json.Marshal(rec)
	os.Remove(w.client.DaemonRecordFile())
	if err := os.WriteFile(w.client.DaemonRecordFile(), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLiveFollowsTheRecord(t *testing.T) {
	w := newLiveWorld(t)
	if got := w.client.Live().RuntimeDir; got != w.daemon {
		t.Fatalf("Live() = %s, want the recorded %s", got, w.daemon)
	}
	pinned := w.client
	pinned.Pinned = true
	if got := pinned.Live().RuntimeDir; got != w.client.RuntimeDir {
		t.Errorf("a pinned runtime directory was replaced by %s", got)
	}
}

// A record or a runtime directory another user could have planted or
// changed is never followed: the client keeps its own paths.
func TestLiveRefusesWhatOthersControl(t *testing.T) {
	type spoiled struct {
		name  string
		spoil func(t *testing.T, w liveWorld)
	}
	tests := []spoiled{
		{"no record", func(t *testing.T, w liveWorld) { os.Remove(w.client.DaemonRecordFile()) }},
		{"a dead daemon", func(t *testing.T, w liveWorld) { w.record(t, DaemonRecord{PID: deadPID(t), RuntimeDir: w.daemon}) }},
		{"a record others may write", func(t *testing.T, w liveWorld) { os.Chmod(w.client.DaemonRecordFile(), 0o666) }},
		{"a record that is a link", func(t *testing.T, w liveWorld) {
			real := filepath.Join(t.TempDir(), "rec.json")
			os.Rename(w.client.DaemonRecordFile(), real)
			os.Symlink(real, w.client.DaemonRecordFile())
		}},
		{"not a record", func(t *testing.T, w liveWorld) { os.WriteFile(w.client.DaemonRecordFile(), []byte(`{"pid":1}`), 0o600) }},
		{"a directory others may enter", func(t *testing.T, w liveWorld) { os.Chmod(w.daemon, 0o755) }},
		{"a directory that is a link", func(t *testing.T, w liveWorld) {
			link := filepath.Join(t.TempDir(), "rt")
			os.Symlink(w.daemon, link)
			w.record(t, DaemonRecord{PID: os.Getpid(), RuntimeDir: link})
		}},
		{"no socket", func(t *testing.T, w liveWorld) { os.Remove(filepath.Join(w.daemon, SocketName)) }},
		{"a file where the socket was", func(t *testing.T, w liveWorld) {
			os.Remove(filepath.Join(w.daemon, SocketName))
			os.WriteFile(filepath.Join(w.daemon, SocketName), nil, 0o600)
		}},
	}
	if os.Getuid() == 0 { // only root can give a file to another user
		tests = append(tests,
			spoiled{"a record of another user's", func(t *testing.T, w liveWorld) { os.Chown(w.client.DaemonRecordFile(), 65534, 65534) }},
			spoiled{"a directory of another user's", func(t *testing.T, w liveWorld) { os.Chown(w.daemon, 65534, 65534) }},
			spoiled{"a socket of another user's", func(t *testing.T, w liveWorld) { os.Lchown(filepath.Join(w.daemon, SocketName), 65534, 65534) }})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newLiveWorld(t)
			tt.spoil(t, w)
			if got := w.client.Live().RuntimeDir; got != w.client.RuntimeDir {
				t.Errorf("Live() followed the record to %s", got)
			}
		})
	}
}

// A FIFO where the record belongs is refused at once: opening it would
// wait for a writer, and a hook with it until Claude Code kills the hook,
// which lets the call run.
func TestLiveRefusesAFIFORecord(t *testing.T) {
	w := newLiveWorld(t)
	os.Remove(w.client.DaemonRecordFile())
	if err := syscall.Mkfifo(w.client.DaemonRecordFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() { got <- w.client.Live().RuntimeDir }()
	select {
	case dir := <-got:
		if dir != w.client.RuntimeDir {
			t.Errorf("Live() followed a FIFO to %s", dir)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a wait for an event
		t.Fatal("Live() still waits on the FIFO after 10s")
	}
	if _, err := w.client.ReadDaemonRecord(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadDaemonRecord: %v, want a refusal of what is not a regular file", err)
	}
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	return p.Pid
}

func TestPathsComeFromTheEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	p := From(env(map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "/run/x"}))
	if p.RuntimeDir != "/run/x/toolgate" || p.StateDir != "/h/.local/state/toolgate" || p.LedgerDir() != "/h/.local/state/toolgate/ledger" || p.Pinned {
		t.Errorf("desktop: %+v", p)
	}
	p = From(env(map[string]string{"HOME": "/h", "TOOLGATE_RUNTIME_DIR": "/r", "TOOLGATE_LEDGER": "/l", "XDG_STATE_HOME": "/s"}))
	if p.RuntimeDir != "/r" || !p.Pinned || p.LedgerDir() != "/l" || p.StateDir != "/s/toolgate" {
		t.Errorf("named: %+v", p)
	}
	p = From(env(map[string]string{"HOME": "/h"}))
	want := filepath.Join(os.TempDir(), "toolgate-"+strconv.Itoa(os.Getuid()))
	if ownDir(UserRuntimeDir()) == nil {
		want = filepath.Join(UserRuntimeDir(), "toolgate")
	}
	if p.RuntimeDir != want {
		t.Errorf("cron: runtime dir %s, want %s", p.RuntimeDir, want)
	}
	if got := ConfigDir(env(map[string]string{"HOME": "/h"})); got != "/h/.config/toolgate" {
		t.Errorf("config dir %s", got)
	}
}
