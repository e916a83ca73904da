package notify

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/dbustest"
	"github.com/toolgate/toolgate/internal/gatetest"
)

// server is a notification server fixture on a real session bus: it
// records Notify and CloseNotification and can emit ActionInvoked.
type server struct {
	conn    *dbus.Conn
	actions bool
	markup  bool // reads bodies as markup
	mu      sync.Mutex
	next    uint32
	shown   map[uint32][]string // id -> actions
	bodies  map[uint32]string
	closed  chan uint32
	notifed chan uint32
}

func (s *server) GetCapabilities() ([]string, *dbus.Error) {
	caps := []string{"body"}
	if s.actions {
		caps = append(caps, "actions")
	}
	if s.markup {
		caps = append(caps, "body-markup")
	}
	return caps, nil
}

func (s *server) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	s.next++
	id := s.next
	s.shown[id] = actions
	s.bodies[id] = body
	s.mu.Unlock()
	s.notifed <- id
	return id, nil
}

func (s *server) CloseNotification(id uint32) *dbus.Error {
	s.closed <- id
	return nil
}

func (s *server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "fixture", "toolgate", "1", "1.2", nil
}

func (s *server) click(t *testing.T, id uint32, key string) {
	if err := s.conn.Emit(path, iface+".ActionInvoked", id, key); err != nil {
		t.Fatal(err)
	}
}

// sessionBus starts a real dbus-daemon --session for the test.
func sessionBus(t *testing.T) string { return dbustest.SessionBus(t) }

func connect(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// startServer exports the fixture on the bus, configured first: once it is
// exported, the bus's goroutines read it.
func startServer(t *testing.T, addr string, configure func(*server)) *server {
	s := &server{conn: connect(t, addr), shown: map[uint32][]string{}, bodies: map[uint32]string{},
		closed: make(chan uint32, 16), notifed: make(chan uint32, 16)}
	configure(s)
	if err := s.conn.Export(s, path, iface); err != nil {
		t.Fatal(err)
	}
	if reply, err := s.conn.RequestName(busName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", busName, reply, err)
	}
	return s
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	var zero T
	return zero
}

// running starts a session bus, the notification server fixture, a daemon
// with a session, and a Notifier, all for the length of the test.
func running(t *testing.T, actions bool, timeout time.Duration, log io.Writer) (*server, *api.Client, *api.Client, string, context.Context) {
	return runningWith(t, func(s *server) { s.actions = actions }, timeout, log)
}

func runningWith(t *testing.T, configure func(*server), timeout time.Duration, log io.Writer) (*server, *api.Client, *api.Client, string, context.Context) {
	t.Helper()
	addr := sessionBus(t)
	srv := startServer(t, addr, configure)
	g := gatetest.Start(t, timeout)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := &Notifier{Bus: connect(t, addr), Approver: g.Approver, Log: log}
	go n.Run(ctx)
	return srv, g.Client, g.Approver, g.Session, ctx
}

func ask(t *testing.T, c *api.Client, session, id string) api.Verdict {
	t.Helper()
	return (&gatetest.Gate{Client: c, Session: session}).Ask(t, id)
}

func TestNotifyApproveDenyWithdraw(t *testing.T) {
	srv, gateClient, approver, session, ctx := running(t, true, time.Hour, nil)

	// Approve by clicking.
	v := ask(t, gateClient, session, "t1")
	id := receive(t, srv.notifed, "notification")
	srv.mu.Lock()
	actions := srv.shown[id]
	srv.mu.Unlock()
	if len(actions) != 4 || actions[0] != "approve:"+v.ApprovalID || actions[2] != "deny:"+v.ApprovalID {
		t.Fatalf("actions %q", actions)
	}
	srv.click(t, id, "approve:"+v.ApprovalID)
	if got, _ := gateClient.Wait(ctx, v.ApprovalID); got.Effect != "allow" || got.Source != "person" {
		t.Fatalf("after Approve: %+v", got)
	}
	if closed := receive(t, srv.closed, "CloseNotification after the decision"); closed != id {
		t.Errorf("closed %d, want %d", closed, id)
	}

	// Deny by clicking.
	v = ask(t, gateClient, session, "t2")
	id = receive(t, srv.notifed, "notification")
	srv.click(t, id, "deny:"+v.ApprovalID)
	if got, _ := gateClient.Wait(ctx, v.ApprovalID); got.Effect != "deny" || got.ReasonCode != "user_denied" {
		t.Fatalf("after Deny: %+v", got)
	}
	receive(t, srv.closed, "CloseNotification after the deny")

	// Decided elsewhere: the notification is withdrawn.
	v = ask(t, gateClient, session, "t3")
	id = receive(t, srv.notifed, "notification")
	if _, err := approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	if closed := receive(t, srv.closed, "CloseNotification after a decision in the CLI"); closed != id {
		t.Errorf("closed %d, want %d", closed, id)
	}
}

func TestLateClickDecidesNothing(t *testing.T) {
	log := &logLines{ch: make(chan string, 16)}
	srv, gateClient, approver, session, ctx := running(t, true, 500*time.Millisecond, log)
	v := ask(t, gateClient, session, "t1")
	id := receive(t, srv.notifed, "notification")
	if got, _ := gateClient.Wait(ctx, v.ApprovalID); got.ReasonCode != "approval_expired" {
		t.Fatalf("expiry: %+v", got)
	}
	receive(t, srv.closed, "CloseNotification after the expiry")
	srv.click(t, id, "approve:"+v.ApprovalID) // too late
	for line := receive(t, log.ch, "a log line"); !strings.Contains(line, "nothing decided"); line = receive(t, log.ch, "the refusal") {
	}
	d, _ := approver.Approval(ctx, v.ApprovalID)
	if d.Approval.Status != "expired" || d.Decision.Actor != "system:expiry" {
		t.Errorf("a late click changed the approval: %+v", d)
	}
}

func TestWithoutActionsSaysWhereToApprove(t *testing.T) {
	srv, gateClient, _, session, _ := running(t, false, time.Hour, nil)
	v := ask(t, gateClient, session, "t1")
	id := receive(t, srv.notifed, "notification")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.shown[id]) != 0 {
		t.Errorf("actions offered to a server without them: %q", srv.shown[id])
	}
	if !strings.Contains(srv.bodies[id], "toolgate approve "+v.ApprovalID) {
		t.Errorf("the notification does not say where to approve: %q", srv.bodies[id])
	}
}

// logLines hands each line the notifier logs to a channel.
type logLines struct{ ch chan string }

func (l *logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		select {
		case l.ch <- line:
		default:
		}
	}
	return len(p), nil
}

// A server that reads bodies as markup gets the model's input escaped: it
// can never become a link or hide text in what a person decides by.
func TestMarkupIsEscaped(t *testing.T) {
	srv, gateClient, _, session, _ := runningWith(t, func(s *server) { s.actions, s.markup = true, true }, time.Hour, nil)
	_, err := gateClient.Prompt(context.Background(), api.PromptRequest{SessionID: session, ToolName: "Bash", ToolUseID: "t1",
		Input: json.RawMessage(`{"command":"rm -rf ~ <b>ls</b> <a href=\"https://x\">safe</a>"}`)})
	if err != nil {
		t.Fatal(err)
	}
	id := receive(t, srv.notifed, "notification")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if body := srv.bodies[id]; !strings.Contains(body, "rm -rf ~ &lt;b&gt;ls&lt;/b&gt; &lt;a href=&#34;https://x&#34;&gt;") {
		t.Errorf("body %q", body)
	}
}

// Probe says who the notification service is and what it can do; doctor
// reports it.
func TestProbe(t *testing.T) {
	addr := sessionBus(t)
	startServer(t, addr, func(s *server) { s.actions = true })
	svc, err := Probe(context.Background(), connect(t, addr))
	if err != nil || svc.Name != "fixture" || svc.Version != "1" || !svc.Actions || svc.Markup {
		t.Errorf("probe: %+v %v", svc, err)
	}
	if _, err := Probe(context.Background(), connect(t, sessionBus(t))); err == nil || !strings.Contains(err.Error(), "no notification service") {
		t.Errorf("a bus without a notification service: %v", err)
	}
}

// away is the daemon's approvers' client with its watch stream under the
// test's control: cut ends the stream, and connecting again waits for
// back. Everything else goes to the real daemon.
type away struct {
	*api.Client
	mu     sync.Mutex
	open   chan struct{} // closed while the notifier may connect
	stream *api.Watcher
}

func (a *away) Watch(ctx context.Context) (*api.Watcher, error) {
	a.mu.Lock()
	open := a.open
	a.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w, err := a.Client.Watch(ctx)
	a.mu.Lock()
	a.stream = w
	a.mu.Unlock()
	return w, err
}

func (a *away) cut() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open = make(chan struct{})
	a.stream.Close()
}

func (a *away) back() {
	a.mu.Lock()
	defer a.mu.Unlock()
	close(a.open)
}

// An ask decided while the notifier was disconnected from the daemon (a
// restart, a suspended laptop) is withdrawn when it reconnects: its
// snapshot no longer lists it. (It stayed on screen, clickable, before.)
func TestWithdrawnWhenDecidedWhileAway(t *testing.T) {
	addr := sessionBus(t)
	srv := startServer(t, addr, func(s *server) { s.actions = true })
	g := gatetest.Start(t, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a := &away{Client: g.Approver, open: make(chan struct{})}
	close(a.open)
	go (&Notifier{Bus: connect(t, addr), Approver: a}).Run(ctx)

	v := g.Ask(t, "t1")
	id := receive(t, srv.notifed, "notification")
	a.cut()
	if _, err := g.Approver.Decide(ctx, v.ApprovalID, api.DecideRequest{Decision: "approve"}); err != nil {
		t.Fatal(err)
	}
	a.back()
	if closed := receive(t, srv.closed, "CloseNotification after reconnecting"); closed != id {
		t.Errorf("closed %d, want %d", closed, id)
	}
}
