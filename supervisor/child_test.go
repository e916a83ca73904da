package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/proc"
)

// TestMain lets this test binary stand in for claude (a helper process,
// as go-plugin does) when TOOLGATE_FAKE_CLAUDE is set.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TOOLGATE_FAKE_CLAUDE"); mode != "" {
		os.Exit(fakeClaude(mode))
	}
	os.Exit(m.Run())
}

// fakeClaude behaves as a mode asks and returns its exit status.
func fakeClaude(mode string) int {
	switch mode {
	case "exit3":
		fmt.Print("some output\x00\xff bytes\n")
		return 3
	case "args":
		fmt.Println(strings.Join(os.Args[1:], "\n"))
		fmt.Println("SESSION=" + os.Getenv("TOOLGATE_SESSION"))
		return 0
	case "signal":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("ready")
		sig := <-sigs
		fmt.Println("got", sig)
		return 42
	case "orphan":
		// Leave a process behind in the group, as a shell tool may.
		sleeper := exec.Command("sleep", "60")
		sleeper.Start()
		fmt.Println(sleeper.Process.Pid)
		return 0
	}
	return 99
}

func fake(mode string, stdout *bytes.Buffer) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TOOLGATE_FAKE_CLAUDE="+mode)
	cmd.Stdout = stdout
	return cmd
}

func TestChildExitCodeAndOutputPassThrough(t *testing.T) {
	var out bytes.Buffer
	c, err := startChild(fake("exit3", &out))
	if err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	if out.String() != "some output\x00\xff bytes\n" {
		t.Errorf("output changed: %q", out.String())
	}
}

func TestSignalsAreForwarded(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TOOLGATE_FAKE_CLAUDE=signal")
	// Not cmd.StdoutPipe: Wait closes that pipe once the child exited,
	// which can be before its last line was read here.
	pipe, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	cmd.Stdout = w
	c, err := startChild(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(pipe)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not start: %q", lines.Text())
	}
	codec := make(chan int, 1)
	go func() { codec <- c.wait() }()
	syscall.Kill(os.Getpid(), syscall.SIGTERM) // to us: the supervisor forwards it
	if !lines.Scan() || lines.Text() != "got terminated" {
		t.Errorf("the child got %q", lines.Text())
	}
	if code := <-codec; code != 42 {
		t.Errorf("exit %d, want the child's 42", code)
	}
}

func TestStopGroupEndsLeftovers(t *testing.T) {
	var out bytes.Buffer
	c, err := startChild(fake("orphan", &out))
	if err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !proc.Alive(pid) {
		t.Fatal("the leftover should still run before stopGroup")
	}
	c.stopGroup(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for proc.Alive(pid) && !isZombie(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if proc.Alive(pid) && !isZombie(pid) {
		t.Errorf("process %d of the group survived", pid)
	}
}

// isZombie reports whether pid has exited and waits for its parent to reap it.
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
