package dbustest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
)

// The notification service's well-known names.
const (
	NotificationsName  = "org.freedesktop.Notifications"
	NotificationsPath  = "/org/freedesktop/Notifications"
	NotificationsIface = "org.freedesktop.Notifications"
)

// Notifications is a notification server on a real session bus, for the
// tests of what shows asks on a desktop: it records Notify and
// CloseNotification, and clicks (emits ActionInvoked) when told to.
type Notifications struct {
	Conn     *dbus.Conn
	Addr     string // the bus
	Actions  bool   // it shows buttons
	Markup   bool   // it reads bodies as markup
	Closed   chan uint32
	Notified chan uint32
	// Unanswered is how many Notify calls, the first ones, it never
	// answers (they wait for the test's end): a service that hangs.
	Unanswered int
	hung       chan struct{}

	mu     sync.Mutex
	next   uint32
	shown  map[uint32][]string // id -> actions
	bodies map[uint32]string
}

func (s *Notifications) GetCapabilities() ([]string, *dbus.Error) {
	caps := []string{"body"}
	if s.Actions {
		caps = append(caps, "actions")
	}
	if s.Markup {
		caps = append(caps, "body-markup")
	}
	return caps, nil
}

func (s *Notifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	s.next++
	id := s.next
	s.shown[id] = actions
	s.bodies[id] = body
	hang := s.Unanswered > 0
	s.Unanswered--
	s.mu.Unlock()
	if hang {
		<-s.hung
		return 0, dbus.MakeFailedError(fmt.Errorf("the test ended"))
	}
	s.Notified <- id
	return id, nil
}

func (s *Notifications) CloseNotification(id uint32) *dbus.Error {
	s.Closed <- id
	return nil
}

func (s *Notifications) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "fixture", "toolgate", "1", "1.2", nil
}

// Click emits ActionInvoked for a notification, as a person's click makes
// the server do.
func (s *Notifications) Click(t testing.TB, id uint32, key string) {
	t.Helper()
	if err := s.Conn.Emit(NotificationsPath, NotificationsIface+".ActionInvoked", id, key); err != nil {
		t.Fatal(err)
	}
}

// Action is the key of a notification's action with that label.
func (s *Notifications) Action(id uint32, label string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.shown[id]
	for i := 1; i < len(a); i += 2 {
		if a[i] == label {
			return a[i-1]
		}
	}
	return ""
}

// Shown is the actions of a notification, as Notify got them.
func (s *Notifications) Shown(id uint32) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown[id]
}

// Body is the body of a notification, as Notify got it.
func (s *Notifications) Body(id uint32) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[id]
}

// Connect connects to the bus at addr until the test ends.
func Connect(t testing.TB, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// StartNotifications serves a notification server on the bus at addr,
// configured first (once exported, the bus's goroutines read it).
func StartNotifications(t testing.TB, addr string, configure func(*Notifications)) *Notifications {
	t.Helper()
	s := &Notifications{Conn: Connect(t, addr), Addr: addr, shown: map[uint32][]string{}, bodies: map[uint32]string{},
		Closed: make(chan uint32, 16), Notified: make(chan uint32, 16), hung: make(chan struct{})}
	t.Cleanup(func() { close(s.hung) })
	configure(s)
	if err := s.Conn.Export(s, NotificationsPath, NotificationsIface); err != nil {
		t.Fatal(err)
	}
	if reply, err := s.Conn.RequestName(NotificationsName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", NotificationsName, reply, err)
	}
	return s
}
