package watch

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/render"
)

// Screen runs the full-screen approver on a terminal until the person
// quits (q) or ctx ends.
func Screen(ctx context.Context, c client.Approver, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, c)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	go client.Follow(ctx, c, func(c client.Change) { p.Send(c) })
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// model is the screen's state.
type model struct {
	ctx    context.Context
	client client.Approver
	list   []api.ApprovalDetail // what is pending, as shown
	cursor string               // the selected approval's id
	scroll int                  // the first line of its input shown
	page   int                  // how many lines of input the screen shows
	log    []string             // what happened, newest last
	up     bool                 // the event stream is connected
	down   string               // why it is not
	reason textinput.Model      // the deny reason being typed, when focused
	width  int
	height int
	now    time.Time
}

// decided is the answer to one of this screen's own decisions.
type decided struct {
	id, decision string
	err          error
}

type tick time.Time

func newModel(ctx context.Context, c client.Approver) *model {
	ti := textinput.New()
	ti.Prompt = "deny, with a reason for the audit (Enter denies, Esc goes back): "
	ti.CharLimit = 500
	return &model{ctx: ctx, client: c, reason: ti, width: 80, height: 24, now: time.Now(), down: "connecting…"}
}

func (m *model) Init() tea.Cmd { return every() }

func every() tea.Cmd { return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tick(t) }) }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tick:
		m.now = time.Time(msg)
		return m, every()
	case client.Change:
		m.change(msg)
	case decided:
		if msg.err != nil {
			m.note(fmt.Sprintf("%s %s: %s", msg.decision, msg.id, decisionError(msg.err)))
		}
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// change takes in one change from the daemon and says what happened.
func (m *model) change(c client.Change) {
	m.up = c.Connected
	if !c.Connected {
		m.down = "the daemon is not reachable; trying again…"
		return
	}
	m.list = c.Pending
	for _, d := range c.Added {
		if m.cursor == "" {
			m.cursor, m.scroll = d.Approval.ID, 0
		}
		m.note(fmt.Sprintf("asked %s  %s: %s", d.Approval.ID, d.Approval.ToolName, render.Summary(d.Approval.ToolName, d.Approval.Input, 40)))
	}
	for _, d := range c.Removed {
		m.note(fmt.Sprintf("%s %s  %s: %s", outcome(d), d.Approval.ID, d.Approval.ToolName, render.Summary(d.Approval.ToolName, d.Approval.Input, 40)))
	}
	if m.selected() < 0 && len(m.list) > 0 {
		m.cursor, m.scroll = m.list[0].Approval.ID, 0
	}
	if len(m.list) == 0 && m.reason.Focused() {
		m.reason.Blur()
	}
}

func (m *model) note(s string) {
	m.log = append(m.log, m.now.Format("15:04:05")+" "+s)
	if len(m.log) > 50 {
		m.log = m.log[len(m.log)-50:]
	}
}

// selected is the index of the selected approval in the list, or -1.
func (m *model) selected() int {
	for i, d := range m.list {
		if d.Approval.ID == m.cursor {
			return i
		}
	}
	return -1
}

func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if m.reason.Focused() {
		switch k.Type {
		case tea.KeyEnter:
			m.reason.Blur()
			return m.decide("deny", strings.TrimSpace(m.reason.Value()))
		case tea.KeyEsc:
			m.reason.Blur()
			return nil
		}
		var cmd tea.Cmd
		m.reason, cmd = m.reason.Update(k)
		return cmd
	}
	i := m.selected()
	switch k.String() {
	case "q", "ctrl+c":
		return tea.Quit
	case "up", "k":
		if i > 0 {
			m.cursor, m.scroll = m.list[i-1].Approval.ID, 0
		}
	case "down", "j":
		if i >= 0 && i < len(m.list)-1 {
			m.cursor, m.scroll = m.list[i+1].Approval.ID, 0
		}
	case "pgdown", " ", "ctrl+d":
		m.scrollBy(i, max(1, m.page-2))
	case "pgup", "b", "ctrl+u":
		m.scrollBy(i, -max(1, m.page-2))
	case "a":
		return m.decide("approve", "")
	case "d":
		if i >= 0 {
			m.reason.SetValue("")
			return m.reason.Focus()
		}
	}
	return nil
}

// scrollBy moves the selected input's window by n lines, within it.
func (m *model) scrollBy(i, n int) {
	if i < 0 {
		return
	}
	a := m.list[i].Approval
	lines := len(render.All(a.ToolName, a.Input, max(m.width, 40)))
	m.scroll = max(0, min(m.scroll+n, lines-m.page))
}

// decide sends a decision on the selected approval, bound to its id: an
// ask decided elsewhere meanwhile is refused by the daemon, never
// another one decided instead.
func (m *model) decide(decision, reason string) tea.Cmd {
	i := m.selected()
	if i < 0 {
		return nil
	}
	id, ctx, c := m.list[i].Approval.ID, m.ctx, m.client
	return func() tea.Msg {
		_, err := c.Decide(ctx, id, api.DecideRequest{Decision: decision, Reason: reason})
		return decided{id: id, decision: decision, err: err}
	}
}

var (
	bold  = lipgloss.NewStyle().Bold(true)
	faint = lipgloss.NewStyle().Faint(true)
	hi    = lipgloss.NewStyle().Reverse(true)
)

func (m *model) View() string {
	w := max(m.width, 40)
	var b strings.Builder
	line := func(s string) { b.WriteString(ansi.Truncate(s, w, "…") + "\n") }
	rule := faint.Render(strings.Repeat("─", w))
	status := "connected"
	if !m.up {
		status = m.down
	}
	line(bold.Render(fmt.Sprintf("toolgate watch — %d waiting", len(m.list))) + "  " + faint.Render(status))
	line(rule)
	rows := max(3, min(len(m.list), (m.height-4)/3))
	top := max(0, min(m.selected()-rows+1, len(m.list)-rows))
	for j, d := range m.list {
		if j < top || j >= top+rows {
			continue
		}
		a := d.Approval
		row := fmt.Sprintf(" %-8s %-14s %s", left(d, m.now), ansi.Truncate(a.ToolName, 14, "…"), render.Summary(a.ToolName, a.Input, w-27))
		if a.ID == m.cursor {
			row = hi.Render(ansi.Truncate(">"+row[1:], w, "…"))
		}
		line(row)
	}
	if len(m.list) == 0 {
		line(faint.Render(" nothing is waiting; new asks show here"))
	}
	line(rule)
	used := 3 + max(1, min(len(m.list), rows))
	if i := m.selected(); i >= 0 {
		d := m.list[i]
		a := d.Approval
		line(bold.Render(a.ID) + "  expires in " + left(d, m.now))
		about := []string{ruleOf(d)}
		if d.ReasonCode != "" { // never "reason_code  ·"
			about = append(about, "reason_code "+d.ReasonCode)
		}
		line(strings.Join(append(about, fmt.Sprintf("policy v%d", a.PolicyVersion)), " · "))
		line(faint.Render("session " + a.SessionID))
		// The whole input, a window of it at a time: PgDn shows the rest,
		// and the window says how much there is; nothing approved is hidden.
		m.page = max(3, m.height-used-10)
		body := render.Window(render.All(a.ToolName, a.Input, w), m.scroll, m.page, "PgDn/PgUp to read it all")
		for _, l := range body {
			line(l)
		}
		used += 3 + len(body)
		line(rule)
		used++
	}
	logRows := max(1, m.height-used-3)
	for _, l := range m.log[max(0, len(m.log)-logRows):] {
		line(faint.Render(l))
	}
	if m.reason.Focused() {
		line(m.reason.View())
	} else {
		line(bold.Render("a") + " approve  " + bold.Render("d") + " deny  " + bold.Render("↑↓") + " select  " +
			bold.Render("PgDn/PgUp") + " scroll  " + bold.Render("q") + " quit")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
