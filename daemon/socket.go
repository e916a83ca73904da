package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/toolgate/toolgate/api"
	"golang.org/x/sys/unix"
)

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
func (d *Daemon) keepSockets(ctx context.Context, servers map[string]*http.Server, held map[string]*socketFile) {
	defer func() {
		for _, f := range held {
			f.close()
		}
	}()
	tick := time.NewTicker(socketCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for path, srv := range servers {
			if held[path].names(path) {
				continue
			}
			d.log.Warn("the socket was removed or replaced by another process: binding it again", "socket", path)
			d.incident(ctx, "daemon", api.Incident{What: "socket_replaced", Detail: path})
			ln, err := rebindSocket(path)
			if err != nil {
				d.log.Error("bind the socket again", "socket", path, "err", err)
				continue
			}
			held[path].close()
			held[path] = holdSocketFile(path)
			go srv.Serve(ln)
		}
	}
}

// socketFile holds the daemon's socket file open (O_PATH), so that its
// inode stays allocated: a file put in its place can never have the same
// inode number, even after the daemon's was unlinked.
type socketFile struct {
	fd int
}

// holdSocketFiles holds each socket file the daemon bound. It runs before
// the daemon says it is ready: a file replaced before it is held would be
// held in its stead, and never taken back.
func holdSocketFiles(paths ...string) map[string]*socketFile {
	held := map[string]*socketFile{}
	for _, path := range paths {
		held[path] = holdSocketFile(path)
	}
	return held
}

func holdSocketFile(path string) *socketFile {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &socketFile{fd: -1}
	}
	return &socketFile{fd: fd}
}

// names reports whether path still names the held file.
func (f *socketFile) names(path string) bool {
	if f.fd < 0 {
		return false
	}
	var held, now unix.Stat_t
	if unix.Fstat(f.fd, &held) != nil || unix.Lstat(path, &now) != nil {
		return false
	}
	return held.Dev == now.Dev && held.Ino == now.Ino
}

func (f *socketFile) close() {
	if f.fd >= 0 {
		unix.Close(f.fd)
	}
}

// rebindSocket takes the socket path back from whatever is there.
func rebindSocket(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return bindSocket(path)
}
