package proc

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// The process that dialled a loopback connection holds its other end; a
// process that did not, even one started by the dialler, does not.
func TestOwnsTCPPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialled.Close()
	c := <-accepted
	defer c.Close()
	if ok, err := OwnsTCPPeer(os.Getpid(), c); !ok || err != nil {
		t.Errorf("this process dialled the connection: %v, %v", ok, err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	if ok, err := OwnsTCPPeer(child.Process.Pid, c); ok || err != nil {
		t.Errorf("a child that holds no end of the connection: %v, %v", ok, err)
	}
}

// BenchmarkOwnsTCPPeer is what the http hook pays once a connection to
// know claude holds it.
func BenchmarkOwnsTCPPeer(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer dialled.Close()
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for b.Loop() {
		if ok, err := OwnsTCPPeer(os.Getpid(), c); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// The kernel's exact lookup and its table name the same socket.
func TestDiagAndTableAgree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialled.Close()
	local, remote := dialled.LocalAddr().(*net.TCPAddr), dialled.RemoteAddr().(*net.TCPAddr)
	viaDiag, err := diagInode(local, remote)
	if err != nil {
		t.Fatalf("sock_diag: %v", err)
	}
	viaTable, err := tcpInode(tcpAddr(local), tcpAddr(remote))
	if err != nil || viaTable != viaDiag {
		t.Fatalf("sock_diag says inode %s, /proc/net/tcp %s (%v)", viaDiag, viaTable, err)
	}
}

// Where no connected socket has the four addresses asked, the kernel's
// lookup may answer with a socket listening on the local port: that is not
// the peer, and nothing is found. A process that only listens on a port
// the peer's connection came from must not pass for the peer.
func TestDiagFindsOnlyTheConnectedSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	local := ln.Addr().(*net.TCPAddr)
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} // nothing is connected from the listener's port to it
	if inode, err := diagInode(local, remote); err == nil {
		t.Fatalf("sock_diag named socket %s for a connection that does not exist", inode)
	}
}
