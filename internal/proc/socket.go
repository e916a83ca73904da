package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// OwnsTCPPeer reports whether the process pid holds the other end of c, an
// accepted TCP connection over IPv4 loopback: the socket whose local
// address is c's remote one and whose remote address is c's local one
// (the kernel's socket table) is among pid's open files. A process that only
// knows where c's listener is, and what to send it, is not pid.
func OwnsTCPPeer(pid int, c net.Conn) (bool, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || local.IP.To4() == nil || remote.IP.To4() == nil {
		return false, fmt.Errorf("not an IPv4 TCP connection: %v", c.RemoteAddr())
	}
	inode, err := diagInode(remote, local)
	if err != nil {
		// No socket found, or no sock_diag (a kernel built without
		// inet_diag): the same table as text, which the kernel makes by
		// walking every bucket (about 0.5 ms).
		if inode, err = tcpInode(tcpAddr(remote), tcpAddr(local)); err != nil {
			return false, err
		}
	}
	return holdsSocket(pid, inode)
}

// diagInode asks the kernel (sock_diag, one exact lookup) for the inode
// of the IPv4 TCP socket from local to remote.
func diagInode(local, remote *net.TCPAddr) (string, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	// struct nlmsghdr, then struct inet_diag_req_v2 (its inet_diag_sockid
	// in network order, and no cookie).
	const hdr, req = unix.SizeofNlMsghdr, 56
	msg := make([]byte, hdr+req)
	binary.NativeEndian.PutUint32(msg[0:], hdr+req)
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	r := msg[hdr:]
	r[0], r[1] = unix.AF_INET, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // every state
	binary.BigEndian.PutUint16(r[8:], uint16(local.Port))
	binary.BigEndian.PutUint16(r[10:], uint16(remote.Port))
	copy(r[12:16], local.IP.To4())
	copy(r[28:32], remote.IP.To4())
	binary.NativeEndian.PutUint32(r[48:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(r[52:], 0xffffffff)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return "", err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			if len(m.Data) >= 4 {
				if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
					return "", fmt.Errorf("sock_diag: %w", syscall.Errno(-errno))
				}
			}
		case unix.SOCK_DIAG_BY_FAMILY:
			// struct inet_diag_msg: family, state, timer, retrans, the
			// sockid (48 bytes), expires, rqueue, wqueue, uid, inode.
			// Where no connected socket matches, the kernel answers with
			// one listening on the local port: only the socket with
			// exactly the four addresses asked is the peer.
			d := m.Data
			if len(d) >= 72 && d[1] != tcpListen && bytes.Equal(d[4:8], r[8:12]) && bytes.Equal(d[8:40], r[12:44]) {
				return strconv.FormatUint(uint64(binary.NativeEndian.Uint32(d[68:])), 10), nil
			}
		}
	}
	return "", fmt.Errorf("sock_diag: no socket from %v to %v", local, remote)
}

// tcpListen is TCP_LISTEN, a socket's state while it listens.
const tcpListen = 10

// tcpAddr is a's address as /proc/net/tcp writes it: the IPv4 address as
// the kernel holds it in memory (network order, printed as a little-endian
// word), then the port.
func tcpAddr(a *net.TCPAddr) string {
	return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(a.IP.To4()), a.Port)
}

// tcpInode is the inode of the socket from local to remote in
// /proc/net/tcp.
func tcpInode(local, remote string) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local && fields[2] == remote {
			return fields[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no socket from %s to %s in /proc/net/tcp", local, remote)
}

// holdsSocket reports whether pid has the socket of inode open.
func holdsSocket(pid int, inode string) (bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	want := "socket:[" + inode + "]"
	for _, e := range entries {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == want {
			return true, nil
		}
	}
	return false, nil
}
