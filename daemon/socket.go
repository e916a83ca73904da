package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/api"
	"golang.org/x/sys/unix"
)

func ownerUID(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// lockFile takes an exclusive flock on path, waiting when wait is set. The
// lock lives as long as the returned file is open (or the process).
func lockFile(path string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// bindSocket listens on the gate socket. The caller holds the daemon
// lock: the lock, not a dial test, says that a socket file left behind is
// stale (a dead daemon's lock is released by the kernel), so the file can
// be replaced.
func bindSocket(sock string) (net.Listener, error) {
	if info, err := os.Lstat(sock); err == nil {
		if info.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it if it is not yours", sock)
		}
		if err := os.Remove(sock); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", sock)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}

// peer is the process at the other end of a connection.
type peer struct {
	UID int
	PID int
}

type peerKey struct{}

// withPeer reads the peer's credentials with SO_PEERCRED; the server puts
// them in every request's context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, peer{UID: int(cred.Uid), PID: int(cred.Pid)})
}

func peerFrom(ctx context.Context) (peer, bool) {
	p, ok := ctx.Value(peerKey{}).(peer)
	return p, ok
}

// socketCheck is how often the daemon makes sure its socket files are its
// own.
const socketCheck = time.Second

// keepSockets makes sure each socket path names the daemon's own socket:
// one removed or replaced by another process of the user (to stand in
// for the gate, or to cut sessions off it) is bound again, and the server
// serves the new listener too. The daemon holds the daemon lock, so the
// path is its to take back.
func (d *Daemon) keepSockets(ctx context.Context, servers map[string]*http.Server, listeners map[string]net.Listener) {
	inodes := map[string]uint64{}
	for path := range listeners {
		inodes[path] = inode(path)
	}
	tick := time.NewTicker(socketCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for path, srv := range servers {
			if ino := inode(path); ino != 0 && ino == inodes[path] {
				continue
			}
			d.log.Warn("the socket was removed or replaced by another process: binding it again", "socket", path)
			d.incident(ctx, "daemon", api.Incident{What: "socket_replaced", Detail: path})
			ln, err := rebindSocket(path)
			if err != nil {
				d.log.Error("bind the socket again", "socket", path, "err", err)
				continue
			}
			inodes[path] = inode(path)
			go srv.Serve(ln)
		}
	}
}

// inode is the inode of the file at path, or 0.
func inode(path string) uint64 {
	info, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Ino
}

// rebindSocket takes the socket path back from whatever is there.
func rebindSocket(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return bindSocket(path)
}
