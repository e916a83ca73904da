package supervisor

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// pinned is a file the session's claude runs or reads from run's setup:
// the hook binary (command hooks), the shell and toolgate-bash.so (every
// Bash command), the settings and MCP configuration run wrote. Claude Code reads a settings
// file again when it changes, and starts a hook and a shell anew for each
// call: one replaced mid-session answers in the gate's place, or runs
// commands outside the boundary. run checks each before every verdict
// and at every settings poll, and stops the session when one changed.
type pinned struct {
	path         string
	dev, ino     uint64
	mode         uint32
	size         int64
	mtime, ctime syscall.Timespec
	sum          [sha256.Size]byte
}

func pinFile(path string) (pinned, error) {
	f, err := os.Open(path)
	if err != nil {
		return pinned{}, err
	}
	defer f.Close()
	p := pinned{path: path}
	if err := p.stat(f); err != nil {
		return pinned{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return pinned{}, err
	}
	copy(p.sum[:], h.Sum(nil))
	return p, nil
}

func (p *pinned) stat(f *os.File) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	p.dev, p.ino, p.mode, p.size, p.mtime, p.ctime = st.Dev, st.Ino, st.Mode, st.Size, st.Mtim, st.Ctim
	return nil
}

// changed says how the file at the pinned path is no longer the one
// pinned, or "". A stat decides; the content is hashed again only when
// the stat differs in its times alone (a touch).
func (p pinned) changed() string {
	var st syscall.Stat_t
	if err := syscall.Stat(p.path, &st); err != nil {
		return fmt.Sprintf("%s is gone (%v)", p.path, err)
	}
	switch {
	case st.Dev != p.dev || st.Ino != p.ino:
		return p.path + " was replaced"
	case st.Size != p.size:
		return p.path + " was rewritten"
	case st.Mode != p.mode:
		// The loader passes over a preload it may not read, and a hook
		// that cannot run fails open.
		return fmt.Sprintf("%s had its mode changed (%o, was %o)", p.path, st.Mode&0o7777, p.mode&0o7777)
	case st.Mtim == p.mtime && st.Ctim == p.ctime:
		return ""
	}
	now, err := pinFile(p.path)
	if err != nil || now.sum != p.sum {
		return p.path + " was rewritten"
	}
	return ""
}

// pinFiles pins what claude will run or read of run's setup.
func (r *runner) pinFiles() error {
	paths := []string{filepath.Join(r.files, "settings.json")}
	if r.cfg.HookTransport == HookCommand {
		paths = append(paths, filepath.Join(r.files, "mcp.json"), r.cfg.Hook)
	}
	if r.level.Bounded() {
		// The link to bash is pinned as what it leads to.
		paths = append(paths, r.shell.Path)
		if r.shell.Preload != "" {
			paths = append(paths, r.shell.Preload)
		}
	}
	for _, path := range paths {
		p, err := pinFile(path)
		if err != nil {
			return fmt.Errorf("read what claude will run: %w", err)
		}
		r.pins = append(r.pins, p)
	}
	return nil
}
