package client

import (
	"os"
	"syscall"
)

// socket is a connection to a Unix socket whose reads and writes block
// their thread, out of Go's network poller: a process that makes one
// request, as the hook does at every tool call, is spared the poller's
// set-up (an epoll instance, an eventfd, their registrations) and the
// hand-off between threads that wakes the goroutine when the answer
// comes, and its binary the net package (about 2% of the hook's time to
// answer, in alternating runs of BenchmarkHookSpawn's kind). Close
// unblocks a read or write under way.
type socket struct{ f *os.File }

// dialUnix connects to the Unix socket at path. Like net.Dial, it does
// not wait for a listener whose backlog is full: the connect fails with
// EAGAIN.
func dialUnix(path string) (*socket, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
	for err == syscall.EINTR {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
	}
	if err == nil {
		err = syscall.SetNonblock(fd, false)
	}
	if err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	// A blocking descriptor: os.NewFile leaves it out of the poller.
	return &socket{os.NewFile(uintptr(fd), path)}, nil
}

func (s *socket) Read(p []byte) (int, error)  { return s.f.Read(p) }
func (s *socket) Write(p []byte) (int, error) { return s.f.Write(p) }

// Close shuts the connection down, which returns a read or write blocked
// on it, and closes the descriptor once none is under way. (Through
// Control, which refuses a closed file: closing twice never shuts down a
// descriptor the number was given to since.)
func (s *socket) Close() error {
	if rc, err := s.f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
	return s.f.Close()
}

// peer reads the credentials of the process at the other end.
func (s *socket) peer() (Peer, error) {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *syscall.Ucred
	if cerr := rc.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); cerr != nil {
		return Peer{}, cerr
	}
	if err != nil {
		return Peer{}, os.NewSyscallError("peer credentials", err)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid)}, nil
}
