package api

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// peerOf reads the credentials of the process at the other end of conn.
func peerOf(conn net.Conn) (Peer, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Peer{}, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil {
		return Peer{}, cerr
	}
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}
