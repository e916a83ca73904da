package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Hook is the webhook's JSON body: a generic document with a
// Slack-compatible text field, so a team's chat or pager hears about an
// ask; the link opens the page (a person signs in there with the code
// toolgate web printed).
type Hook struct {
	Text      string    `json:"text"`
	Approval  string    `json:"approval_id"`
	Host      string    `json:"host,omitempty"`
	Tool      string    `json:"tool"`
	Summary   string    `json:"summary"`
	Rule      string    `json:"rule,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	URL       string    `json:"url"`
}

// announce posts one new ask to the webhook; a failure is logged (the
// page still shows the ask).
func (s *Server) announce(ctx context.Context, it Item) {
	summary := ""
	if len(it.Lines) > 0 {
		summary = it.Lines[0]
	}
	where := ""
	if it.Host != "" {
		where = " on " + it.Host
	}
	link := s.cfg.Origins[len(s.cfg.Origins)-1] + "/#" + it.ID
	h := Hook{Text: fmt.Sprintf("toolgate: %s%s asks a person: %s (approval %s, expires %s) %s", it.Tool, where, summary, it.ID,
		it.ExpiresAt.UTC().Format(time.RFC3339), link), Approval: it.ID, Host: it.Host, Tool: it.Tool, Summary: summary,
		Rule: it.Rule, ExpiresAt: it.ExpiresAt, URL: link}
	body, _ := json.Marshal(h)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.cfg.Webhook, bytes.NewReader(body))
	if err != nil {
		s.log.Error("web: webhook", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.log.Warn("web: webhook failed", "approval", it.ID, "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		s.log.Warn("web: webhook refused", "approval", it.ID, "status", resp.Status)
	}
}
