package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/toolgate/toolgate/fleet"
	"github.com/toolgate/toolgate/internal/pgtest"
)

var ctx = context.Background()

// page is a toolgate web serving a real fleet's queue (a real PostgreSQL)
// on a loopback port, with a host's role to ask and an approver's to decide.
type page struct {
	t      *testing.T
	srv    *Server
	origin string
	super  *pgx.Conn
	host   *pgx.Conn
}

func newPage(t *testing.T, webhook string) *page {
	t.Helper()
	pg := pgtest.Start(t)
	db := pg.NewDatabase(ctx)
	if _, err := fleet.Init(ctx, pg.SuperDSN(db)); err != nil {
		t.Fatal(err)
	}
	role := func(name, kind string) string {
		pw := pgtest.Password()
		if err := fleet.AddRole(ctx, pg.SuperDSN(db), name, kind, pw); err != nil {
			t.Fatal(err)
		}
		return pg.DSN(db, name, pw)
	}
	hostDSN, aliceDSN := role("host_a", "host"), role("alice", "approver")
	ap, err := fleet.Dial(ctx, aliceDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ap.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, origin: "http://" + ln.Addr().String()}
	if p.srv, err = New(Config{Queue: FleetQueue{Approver: ap}, Origins: []string{p.origin}, Webhook: webhook}); err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: p.srv.Handler()}
	go hs.Serve(ln)
	runCtx, cancel := context.WithCancel(ctx)
	go p.srv.Run(runCtx)
	t.Cleanup(func() { cancel(); hs.Close() })
	for dsn, c := range map[string]**pgx.Conn{pg.SuperDSN(db): &p.super, hostDSN: &p.host} {
		if *c, err = pgx.Connect(ctx, dsn); err != nil {
			t.Fatal(err)
		}
		conn := *c
		t.Cleanup(func() { conn.Close(context.Background()) })
	}
	return p
}

// ask inserts an ask as host_a's daemon would publish it.
func (p *page) ask(id, command string) {
	p.t.Helper()
	input, _ := json.Marshal(map[string]string{"command": command, "description": "step"})
	if _, err := p.host.Exec(ctx, `INSERT INTO toolgate.approvals (id, session_id, tool_use_id, tool_name, input, matched_rule, policy_version, created_at, expires_at)
		VALUES ($1, 'ses_1', 'toolu_'||$1, 'Bash', $2::text::json, 'ask-push', 1, now(), now() + interval '1 hour')`, id, string(input)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *page) decision(id string) (decision, actor, note string) {
	p.t.Helper()
	p.super.QueryRow(ctx, `SELECT decision, actor, coalesce(note, '') FROM toolgate.decisions WHERE approval_id = $1`, id).Scan(&decision, &actor, &note)
	return
}

// signIn posts the one-time code from the page's origin and returns a
// client holding the session's cookie, and the page's CSRF token.
func (p *page) signIn() (*http.Client, string) {
	p.t.Helper()
	c, status, body := p.postCode(p.srv.Code(), p.origin)
	if status != 200 {
		p.t.Fatalf("sign in: %d %s", status, body)
	}
	_, rest, _ := strings.Cut(body, `name="toolgate-csrf" content="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	return c, csrf
}

// postCode posts a code to the sign-in form with an Origin header ("" for
// none), following the redirect to the page, and returns the client with
// its cookies, and the final status and body.
func (p *page) postCode(code, origin string) (*http.Client, int, string) {
	p.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", p.origin+"/signin", strings.NewReader(url.Values{"code": {code}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return c, resp.StatusCode, string(body)
}

func (p *page) post(c *http.Client, body string, headers map[string]string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.origin+"/api/decide", strings.NewReader(body))
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// What reaches the page without the person's session, or from another
// origin, decides nothing: a model on this machine can reach the port.
func TestOnlyThePersonsSessionDecides(t *testing.T) {
	p := newPage(t, "")
	p.ask("apr_1", "git push origin main")
	anon := &http.Client{}
	for _, path := range []string{"/", "/api/state", "/api/events"} {
		resp, err := anon.Get(p.origin + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusUnauthorized
		if path == "/" {
			want = http.StatusOK // the sign-in form, and nothing of the queue
		}
		if resp.StatusCode != want || strings.Contains(string(page), "toolgate-csrf") {
			t.Errorf("GET %s without a session: %s", path, resp.Status)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP %q", csp)
		}
	}
	if _, status, _ := p.postCode("BBBBB-BBBBB", p.origin); status != http.StatusForbidden {
		t.Errorf("a wrong code: %d", status)
	}
	if _, status, _ := p.postCode(p.srv.Code(), "http://evil.example"); status != http.StatusForbidden {
		t.Errorf("the code posted from another origin: %d", status)
	}
	if _, status, _ := p.postCode(p.srv.Code(), ""); status != http.StatusForbidden {
		t.Errorf("the code posted without an origin: %d", status)
	}
	if strings.Contains(p.srv.URL(), p.srv.Code()) || strings.Contains(p.srv.URL(), "?") {
		t.Errorf("the page's address %s carries a secret", p.srv.URL())
	}
	c, csrf := p.signIn()
	// The session's cookie alone opens nothing: the browser sends it to
	// every server on 127.0.0.1, one the model runs included. The page
	// comes without the token, and the API wants it.
	for _, path := range []string{"/", "/api/state", "/api/events"} {
		resp, err := c.Get(p.origin + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := http.StatusForbidden
		if path == "/" {
			want = http.StatusOK
		}
		if resp.StatusCode != want || strings.Contains(string(page), csrf) {
			t.Errorf("GET %s with the cookie alone: %s", path, resp.Status)
		}
	}
	// The code works once: typed again (by a process that saw it), it
	// signs nobody in.
	if _, status, _ := p.postCode(p.srv.Code(), p.origin); status != http.StatusForbidden {
		t.Errorf("the code's second use: %d", status)
	}
	body := `{"id": "apr_1", "decision": "approve", "reason": "ok"}`
	json := "application/json"
	attacks := []struct {
		name    string
		client  *http.Client
		headers map[string]string
		want    int
	}{
		{"no session", anon, map[string]string{"Origin": p.origin, "X-Toolgate-CSRF": csrf, "Content-Type": json}, 401},
		{"no CSRF token (a form on another site)", c, map[string]string{"Origin": p.origin, "Content-Type": json}, 403},
		{"a wrong CSRF token", c, map[string]string{"Origin": p.origin, "X-Toolgate-CSRF": "x", "Content-Type": json}, 403},
		{"another origin", c, map[string]string{"Origin": "http://evil.example", "X-Toolgate-CSRF": csrf, "Content-Type": json}, 403},
		{"no origin", c, map[string]string{"X-Toolgate-CSRF": csrf, "Content-Type": json}, 403},
		{"DNS rebinding (another Host)", c, map[string]string{"Host": "evil.example:80", "Origin": "http://evil.example:80", "X-Toolgate-CSRF": csrf, "Content-Type": json}, 421},
		{"a form post", c, map[string]string{"Origin": p.origin, "X-Toolgate-CSRF": csrf, "Content-Type": "text/plain"}, 415},
	}
	for _, at := range attacks {
		if code, msg := p.post(at.client, body, at.headers); code != at.want {
			t.Errorf("%s: %d %s, want %d", at.name, code, msg, at.want)
		}
	}
	if d, _, _ := p.decision("apr_1"); d != "" {
		t.Fatalf("an attack decided: %s", d)
	}
	if code, msg := p.post(c, body, map[string]string{"Origin": p.origin, "X-Toolgate-CSRF": csrf, "Content-Type": json}); code != 200 {
		t.Fatalf("the person's decision: %d %s", code, msg)
	}
	if d, actor, note := p.decision("apr_1"); d != "allow" || actor != "alice@127.0.0.1" || note != "ok" {
		t.Errorf("decision %s by %s (%s)", d, actor, note)
	}
	if code, msg := p.post(c, body, map[string]string{"Origin": p.origin, "X-Toolgate-CSRF": csrf, "Content-Type": json}); code != 409 {
		t.Errorf("a second decision: %d %s", code, msg)
	}
}

// Wrong codes never lock the person out (the model's code could send
// them): after many, the person's code still signs in, once; and a code
// holds enough to outlast guessing.
func TestWrongCodesDoNotLockThePersonOut(t *testing.T) {
	p := newPage(t, "")
	for i := range 50 {
		if _, status, _ := p.postCode(fmt.Sprintf("ZZZZ-ZZZZ-ZZ%02d", i), p.origin); status != http.StatusForbidden {
			t.Fatalf("wrong code %d: %d", i, status)
		}
	}
	p.signIn()
	if code := normalCode(p.srv.Code()); len(code) != 12 || strings.Trim(code, codeAlphabet) != "" {
		t.Errorf("code %q: want 12 characters of %s", p.srv.Code(), codeAlphabet)
	}
}

// chromium finds Debian's Chromium: the browser tests never skip.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("this test drives a real headless Chromium and none is installed: apt-get install chromium (Debian)")
	return ""
}

// Browser starts a headless Chromium for the test.
func Browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	bctx, cancelTimeout := context.WithTimeout(bctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	return bctx
}

// A person approves in a real browser; the page shows what the model
// wrote as text, and updates itself as asks come and go.
func TestBrowserApproves(t *testing.T) {
	p := newPage(t, "")
	p.ask("apr_1", `echo '<img src=x onerror="document.title=1">' > x; printf '\033[31m'`)
	b := Browser(t)
	if err := chromedp.Do(b, chromedp.Navigate(p.srv.URL()), chromedp.SendKeys(`#code`, strings.ToLower(p.srv.Code())), chromedp.Submit(`#code`),
		chromedp.WaitVisible(`li.ask[data-id="apr_1"] button.approve`)); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(b, chromedp.Text(`li.ask[data-id="apr_1"] pre.input`))
	if err != nil {
		t.Fatal(err)
	}
	imgs, _ := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll("#pending img").length`))
	title, _ := chromedp.Run(b, chromedp.Title())
	if !strings.Contains(shown, `$ echo '<img src=x onerror="document.title=1">' > x; printf '`) || strings.ContainsRune(shown, '\033') || imgs != 0 || title != "toolgate — approvals" {
		t.Errorf("the ask as shown: %q (%d img, title %q)", shown, imgs, title)
	}
	// A second ask arrives while the page is open (server-sent events).
	p.ask("apr_2", "git push --force")
	err = chromedp.Do(b,
		chromedp.WaitVisible(`li.ask[data-id="apr_2"]`),
		chromedp.SendKeys(`li.ask[data-id="apr_1"] input.reason`, "checked it"),
		chromedp.Click(`li.ask[data-id="apr_1"] button.approve`),
		chromedp.WaitVisible(`#recent li[data-id="apr_1"]`),
		chromedp.WaitNotPresent(`li.ask[data-id="apr_1"]`),
		chromedp.Click(`li.ask[data-id="apr_2"] button.deny`),
		chromedp.WaitVisible(`#recent li[data-id="apr_2"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if d, actor, note := p.decision("apr_1"); d != "allow" || actor != "alice@127.0.0.1" || note != "checked it" {
		t.Errorf("apr_1: %s by %s (%s)", d, actor, note)
	}
	if d, _, _ := p.decision("apr_2"); d != "deny" {
		t.Errorf("apr_2: %s", d)
	}
}

// Each new ask is posted to the webhook, once, with a Slack-compatible text.
func TestWebhook(t *testing.T) {
	got := make(chan Hook, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h Hook
		json.NewDecoder(r.Body).Decode(&h)
		got <- h
	}))
	defer hook.Close()
	p := newPage(t, hook.URL)
	p.ask("apr_1", "git push origin main")
	select {
	case h := <-got:
		if h.Approval != "apr_1" || !strings.Contains(h.Text, "Bash on host_a asks a person: $ git push origin main") || h.URL != p.origin+"/#apr_1" {
			t.Errorf("webhook %+v", h)
		}
	case <-time.After(time.Minute):
		t.Fatal("the webhook never heard of the ask")
	}
}
