package paths

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// One daemon serves a ledger (Badger locks its directory), but processes of
// one user do not all see the same environment: a cron job has no
// XDG_RUNTIME_DIR, a desktop session does, so each would look for the
// sockets somewhere else. The daemon therefore leaves a record in the
// ledger's directory naming its runtime directory, and clients go where
// the record says while its daemon lives.
//
// Another local user must not be able to point a client at a socket of
// theirs: the record is believed only when it is a regular file of the
// user's that nobody else may write, and the runtime directory it names
// only when it is a real directory of the user's, 0700, holding a socket of
// the user's. The daemon refuses other uids besides.

// DaemonRecordName is the record's file name in the ledger's directory.
const DaemonRecordName = "daemon.json"

// DaemonRecord is what the daemon writes beside its ledger.
type DaemonRecord struct {
	PID        int       `json:"pid"`
	RuntimeDir string    `json:"runtime_dir"`
	Started    time.Time `json:"started"`
}

// DaemonRecordFile is the record's path.
func (p Paths) DaemonRecordFile() string { return filepath.Join(p.LedgerDir(), DaemonRecordName) }

// Live returns p with the runtime directory of the live daemon that serves
// p's ledger, when its record passes the checks above and that daemon
// still runs; otherwise p as it is. A pinned runtime directory is kept.
func (p Paths) Live() Paths { return p.LiveWith(DecodeDaemonRecord) }

// LiveWith is Live with the record's bytes decoded by decode: the hook,
// which reads the record at every call of an installed session, in a
// process of its own, decodes it without encoding/json's reflection.
func (p Paths) LiveWith(decode func([]byte) (DaemonRecord, error)) Paths {
	if p.Pinned {
		return p
	}
	rec, err := p.readDaemonRecord(decode)
	if err != nil || rec.RuntimeDir == p.RuntimeDir || !processExists(rec.PID) {
		return p
	}
	if CheckRuntimeDir(rec.RuntimeDir) != nil {
		return p
	}
	p.RuntimeDir = rec.RuntimeDir
	return p
}

// ReadDaemonRecord reads and checks the record beside the ledger; it says
// nothing of whether its daemon still runs.
func (p Paths) ReadDaemonRecord() (DaemonRecord, error) {
	return p.readDaemonRecord(DecodeDaemonRecord)
}

// DecodeDaemonRecord decodes a record's bytes as json.Unmarshal does.
func DecodeDaemonRecord(data []byte) (DaemonRecord, error) {
	var rec DaemonRecord
	err := json.Unmarshal(data, &rec)
	return rec, err
}

func (p Paths) readDaemonRecord(decode func([]byte) (DaemonRecord, error)) (DaemonRecord, error) {
	var rec DaemonRecord
	f, info, err := OpenRegular(p.DaemonRecordFile(), syscall.O_NOFOLLOW|os.O_RDONLY)
	if err != nil {
		return rec, err
	}
	defer f.Close()
	if err := ownedPrivately(info, false); err != nil {
		return rec, fmt.Errorf("%s: %w", p.DaemonRecordFile(), err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return rec, err
	}
	if rec, err = decode(data); err != nil || !filepath.IsAbs(rec.RuntimeDir) || rec.PID <= 0 {
		return rec, fmt.Errorf("%s: not a daemon record", p.DaemonRecordFile())
	}
	return rec, nil
}

// CheckRuntimeDir refuses a runtime directory a client must not trust: one
// that is not a real directory of the user's with mode 0700, or whose gate
// socket is not a socket of the user's.
func CheckRuntimeDir(dir string) error {
	if err := ownDir(dir); err != nil {
		return err
	}
	info, err := os.Lstat(filepath.Join(dir, SocketName))
	if err != nil {
		return err
	}
	if info.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s is not a socket", filepath.Join(dir, SocketName))
	}
	return ownedPrivately(info, true)
}

// ownDir checks that dir is a directory (not a link to one) of the user's
// that nobody else may enter.
func ownDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is %v: others may enter it", dir, info.Mode().Perm())
	}
	return ownedPrivately(info, true)
}

// ownedPrivately checks that a file belongs to the user and that nobody
// else may write it (nor read it, when strict).
func ownedPrivately(info fs.FileInfo, strict bool) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner")
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("it belongs to uid %d, not to you", st.Uid)
	}
	mask := fs.FileMode(0o022)
	if strict {
		mask = 0o077
	}
	if info.Mode().Perm()&mask != 0 {
		return fmt.Errorf("its mode %v lets others in", info.Mode().Perm())
	}
	return nil
}

// processExists reports whether pid names a process of the user's. A
// zombie counts: the dead daemon's socket, left behind, then refuses the
// connection, and a client starts a daemon as it would anyway.
func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
