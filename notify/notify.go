// Package notify is toolgate notify: a desktop approver. Every pending ask
// becomes a freedesktop notification (over the D-Bus session bus) with
// Approve and Deny actions bound to that ask's approval id, withdrawn when
// the ask is decided elsewhere or expires. It talks to the daemon through
// the approvers' socket only.
package notify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/proc"
	"github.com/toolgate/toolgate/render"
)

const (
	busName = "org.freedesktop.Notifications"
	path    = "/org/freedesktop/Notifications"
	iface   = "org.freedesktop.Notifications"
)

// Notifier shows asks as notifications and decides them on a click.
type Notifier struct {
	Bus      *dbus.Conn
	Approver client.Approver
	Log      io.Writer // one line per thing that happened

	actions bool // the server supports actions
	markup  bool // the server reads the body as markup: text must be escaped
	mu      sync.Mutex
	byID    map[string]uint32  // approval id -> notification id
	keys    map[string]*posted // action key -> the notification it belongs to
	owner   string             // the unique bus name of the notification server
	// serverExe is the program that served the notification service when
	// notify started: clicks count from it alone.
	serverExe string
	// notifyWait is how long a Notify may take (tests); defaultNotifyWait
	// when 0.
	notifyWait time.Duration
}

// posted is an action of a notification this notifier showed: its key is
// random and its own, so that a click can only ever decide this approval,
// and only through this notification.
type posted struct {
	approvalID string
	decision   string        // approve or deny
	id         uint32        // the notification's, once the server has said it
	answered   chan struct{} // closed once Notify answered: id is set, or stays 0 (it failed)
}

// Service is what the session bus's notification service says of itself.
type Service struct {
	Name, Vendor, Version string
	Actions               bool // it shows buttons (Approve, Deny)
	Markup                bool // it reads bodies as markup
}

// noAutoStart is every call's flag: the bus never starts a notification
// service for toolgate. It would start whatever a service file in the
// user's own directories names (~/.local/share/dbus-1/services), and code
// the model runs can write one; a server the bus starts runs outside any
// session's boundary.
const noAutoStart = dbus.FlagNoAutoStart

// Probe asks the notification service on bus who it is and what it can
// do. It must be running already.
func Probe(ctx context.Context, bus *dbus.Conn) (Service, error) {
	obj := bus.Object(busName, path)
	var s Service
	var caps []string
	if err := obj.CallWithContext(ctx, iface+".GetCapabilities", noAutoStart).Store(&caps); err != nil {
		return s, fmt.Errorf("no notification service runs on the session bus (toolgate does not have the bus start one): %w", err)
	}
	for _, c := range caps {
		s.Actions = s.Actions || c == "actions"
		s.Markup = s.Markup || c == "body-markup"
	}
	var spec string
	if err := obj.CallWithContext(ctx, iface+".GetServerInformation", noAutoStart).Store(&s.Name, &s.Vendor, &s.Version, &spec); err != nil {
		return s, fmt.Errorf("the notification service does not say who it is: %w", err)
	}
	return s, nil
}

// Run shows notifications until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	n.byID, n.keys = map[string]uint32{}, map[string]*posted{}
	svc, err := Probe(ctx, n.Bus)
	if err != nil {
		return err
	}
	n.actions, n.markup = svc.Actions, svc.Markup
	if !n.actions {
		n.logf("the notification service has no actions: notifications say how to approve instead")
	}
	// The owner is watched before it is read: a change in between is seen.
	if err := n.Bus.AddMatchSignalContext(ctx, dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, busName)); err != nil {
		return err
	}
	if err := n.Bus.AddMatchSignalContext(ctx, dbus.WithMatchInterface(iface), dbus.WithMatchObjectPath(path)); err != nil {
		return err
	}
	if err := n.busOwner(ctx); err != nil {
		return err
	}
	var server uint32
	if err := n.Bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, n.owner).Store(&server); err != nil {
		return fmt.Errorf("which process is the notification service: %w", err)
	}
	if n.serverExe, err = proc.Exe(int(server)); err != nil {
		return fmt.Errorf("the notification service's program: %w", err)
	}
	signals := make(chan *dbus.Signal, 64)
	n.Bus.Signal(signals)
	defer n.Bus.RemoveSignal(signals)
	go n.clicks(ctx, signals)
	client.Follow(ctx, n.Approver, func(c client.Change) {
		for _, d := range c.Removed {
			n.withdraw(ctx, d.Approval.ID)
		}
		for _, d := range c.Added {
			n.show(ctx, d)
		}
	})
	return nil
}

// busOwner reads which connection owns the notification service's name:
// only its signals are clicks.
func (n *Notifier) busOwner(ctx context.Context) error {
	var owner string
	if err := n.Bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, busName).Store(&owner); err != nil {
		return fmt.Errorf("no notification service on the session bus: %w", err)
	}
	n.mu.Lock()
	n.owner = owner
	n.mu.Unlock()
	return nil
}

// show posts one notification for a pending ask, once.
func (n *Notifier) show(ctx context.Context, d api.ApprovalDetail) {
	a := d.Approval
	n.mu.Lock()
	_, shown := n.byID[a.ID]
	n.mu.Unlock()
	if shown || a.Status != "pending" {
		return
	}
	rule := "the policy's default"
	if a.MatchedRule != nil {
		rule = "rule " + *a.MatchedRule
	}
	body := fmt.Sprintf("%s\n%s asks; expires at %s", render.Summary(a.ToolName, a.Input, 120), rule, a.ExpiresAt.Local().Format("15:04"))
	if render.Clipped(a.ToolName, a.Input, 120) {
		// A notification cannot show it all: it must say so, and where.
		body += "\nnot all of it is shown: toolgate show " + a.ID
	}
	var actions []string
	var mine []*posted
	if n.actions {
		// Known before the server shows them: a click can come as soon as
		// the notification is on screen, before its id reaches us.
		approve, deny := randomKey(), randomKey()
		answered := make(chan struct{})
		mine = []*posted{{approvalID: a.ID, decision: "approve", answered: answered}, {approvalID: a.ID, decision: "deny", answered: answered}}
		defer close(answered)
		n.mu.Lock()
		n.keys[approve], n.keys[deny] = mine[0], mine[1]
		n.mu.Unlock()
		actions = []string{approve, "Approve", deny, "Deny"}
	} else {
		body += "\ntoolgate approve " + a.ID
	}
	if n.markup {
		// The input is the model's: it must not become a link or hide
		// text in the notification a person decides by.
		body = html.EscapeString(body)
	}
	timeout := int32(max(time.Until(a.ExpiresAt).Milliseconds(), 1000))
	// A service that never answers (one the model put in the name's
	// place) must not hold up every later ask, nor a click for long.
	nctx, cancel := context.WithTimeout(ctx, cmp.Or(n.notifyWait, defaultNotifyWait))
	defer cancel()
	var id uint32
	err := n.Bus.Object(busName, path).CallWithContext(nctx, iface+".Notify", noAutoStart, "toolgate", uint32(0), "dialog-question",
		"toolgate: "+a.ToolName+" wants to run", body, actions, map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(2))}, timeout).Store(&id)
	if err != nil {
		n.logf("notify %s: %v", a.ID, err)
		return
	}
	if testHookNotified != nil {
		testHookNotified()
	}
	n.mu.Lock()
	n.byID[a.ID] = id
	for _, p := range mine {
		p.id = id
	}
	n.mu.Unlock()
	n.logf("shown %s (%s)", a.ID, a.ToolName)
}

// Set by tests: testHookNotified is called by show once Notify answered,
// before it stores the answer; testHookClick by click as it begins.
var testHookNotified, testHookClick func()

// clickWait bounds how long a click waits for the answer to the Notify
// that showed its notification; defaultNotifyWait how long show waits for
// that answer.
const (
	clickWait         = 10 * time.Second
	defaultNotifyWait = 5 * time.Second
)

// randomKey is an action key nobody can guess.
func randomKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "toolgate-" + hex.EncodeToString(b)
}

// withdraw closes the notification of an ask decided elsewhere or expired.
func (n *Notifier) withdraw(ctx context.Context, approvalID string) {
	n.mu.Lock()
	id, ok := n.byID[approvalID]
	delete(n.byID, approvalID)
	for key, p := range n.keys {
		if p.approvalID == approvalID {
			delete(n.keys, key)
		}
	}
	n.mu.Unlock()
	if ok {
		n.Bus.Object(busName, path).CallWithContext(ctx, iface+".CloseNotification", noAutoStart, id)
		n.logf("withdrawn %s", approvalID)
	}
}

// clicks decides the approval of a notification this notifier posted,
// when the notification server says its action was invoked. Any other
// ActionInvoked (from another connection: anything of the user's can
// emit a signal on the session bus; for a notification it did not post;
// with a key it did not give) decides nothing.
func (n *Notifier) clicks(ctx context.Context, signals <-chan *dbus.Signal) {
	for {
		var s *dbus.Signal
		select {
		case <-ctx.Done():
			return
		case s = <-signals:
		}
		if s == nil {
			continue
		}
		switch {
		case s.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(s.Body) == 3 && s.Sender == "org.freedesktop.DBus":
			// Only the bus says who owns a name: anything can send a
			// signal named so straight to this connection, and it would
			// make its sender the notification service.
			if name, _ := s.Body[0].(string); name == busName {
				owner, _ := s.Body[2].(string)
				n.mu.Lock()
				n.owner = owner
				n.mu.Unlock()
			}
		case s.Name == iface+".ActionInvoked" && len(s.Body) == 2:
			n.click(ctx, s)
		}
	}
}

// click decides what one genuine click says.
func (n *Notifier) click(ctx context.Context, s *dbus.Signal) {
	if testHookClick != nil {
		testHookClick()
	}
	id, _ := s.Body[0].(uint32)
	key, _ := s.Body[1].(string)
	n.mu.Lock()
	owner, p := n.owner, n.keys[key]
	n.mu.Unlock()
	var posted uint32 // the notification the key was given to
	if p != nil && s.Sender == owner {
		// A click can come before Notify's answer reaches show: it is
		// checked against the id once that answer is in.
		select {
		case <-p.answered:
		case <-ctx.Done():
			return
		case <-time.After(clickWait):
		}
		n.mu.Lock()
		posted = p.id
		n.mu.Unlock()
	}
	if s.Sender != owner || p == nil || posted == 0 || posted != id {
		n.logf("ignored an ActionInvoked from %s (the notification service is %s) for notification %d: not a click on one of toolgate's", s.Sender, owner, id)
		return
	}
	// The server's process is checked by the daemon as a person's would
	// be: a server the model started (the name was free, or freed) holds
	// the keys toolgate gave it, and must not decide with them.
	var server uint32
	if err := n.Bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, s.Sender).Store(&server); err != nil || server == 0 {
		n.logf("%s %s: nothing decided: the bus does not say which process the notification service is (%v)", p.decision, p.approvalID, err)
		return
	}
	// And it is the program that served the name when notify started: the
	// bus starts whatever a service file in the user's directories names,
	// outside any session's boundary, once the name is free.
	if exe, _ := proc.Exe(int(server)); exe != n.serverExe {
		n.logf("%s %s: nothing decided: the notification service is now %s, not %s as when toolgate notify started; restart toolgate notify to trust it",
			p.decision, p.approvalID, exe, n.serverExe)
		return
	}
	decision := p.decision
	_, err := n.Approver.Decide(ctx, p.approvalID, api.DecideRequest{Decision: decision, Reason: "from a desktop notification", ViaPID: int(server)})
	var se *client.StatusError
	switch {
	case errors.As(err, &se):
		n.logf("%s %s: nothing decided: %s", decision, p.approvalID, se.Err.Message)
	case err != nil:
		n.logf("%s %s: %v", decision, p.approvalID, err)
	default:
		n.logf("%s %s", map[string]string{"approve": "approved", "deny": "denied"}[decision], p.approvalID)
	}
}

func (n *Notifier) logf(format string, args ...any) {
	if n.Log != nil {
		fmt.Fprintf(n.Log, "toolgate notify: "+format+"\n", args...)
	}
}
