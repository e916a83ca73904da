// Package modelscript serves a scripted Claude Messages API on loopback, so
// that the real Claude Code CLI can run offline with no key: turn N of a
// conversation answers with the N-th step of a script. The end-to-end tests
// and toolgate demo use it. It records every request, so a test can read
// exactly what the model was shown (the tool_result blocks).
package modelscript

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// ToolUse is one tool_use block the model proposes.
type ToolUse struct {
	ID    string // toolu_...; generated when empty
	Name  string
	Input any // marshalled to JSON
}

// Step is one assistant turn: tool calls (several run as one message), or
// text when there are none.
type Step struct {
	ToolUses []ToolUse
	Text     string
	// Before, when set, runs when the turn is requested, before it is
	// answered (a test can kill a daemon at an exact point of the run).
	Before func()
}

// Server is a running scripted model.
type Server struct {
	URL string // for ANTHROPIC_BASE_URL

	script []Step
	srv    *http.Server
	mu     sync.Mutex
	reqs   [][]byte
	agents []agentScript
}

// agentScript is the script of the conversations whose first user
// message holds marker.
type agentScript struct {
	marker string
	script []Step
}

// Agent scripts a subagent: a conversation whose first user message
// holds marker (the prompt the main script's Agent call gives it) answers
// turn N with the N-th step of script, as the main conversation does with
// the script Start was given.
func (s *Server) Agent(marker string, script []Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents = append(s.agents, agentScript{marker, script})
}

// scriptOf is the script a request's conversation follows.
func (s *Server) scriptOf(body []byte) []Step {
	first := gjson.GetBytes(body, "messages.0")
	text := first.Get("content").String()
	if c := first.Get("content"); c.IsArray() {
		text = resultText(c)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.agents {
		if first.Get("role").String() == "user" && strings.Contains(text, a.marker) {
			return a.script
		}
	}
	return s.script
}

// Final is the text answered once the script is over.
const Final = "All done."

// Start serves script on a random loopback port.
func Start(script []Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens": 10}`)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// requests returns the bodies of every /v1/messages request so far.
func (s *Server) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

// Turns is how many turns the model has been asked for so far.
func (s *Server) Turns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Result is what the model saw as the result of one tool call.
type Result struct {
	Text    string
	IsError bool
}

// ToolResults returns, by tool_use_id, the tool_result blocks of the
// latest conversation: exactly what the model saw.
func (s *Server) ToolResults() map[string]Result {
	out := map[string]Result{}
	for _, body := range s.requests() {
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			m.Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").String() != "tool_result" {
					return true
				}
				out[b.Get("tool_use_id").String()] = Result{Text: resultText(b.Get("content")), IsError: b.Get("is_error").Bool()}
				return true
			})
			return true
		})
	}
	return out
}

func resultText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var parts []string
	c.ForEach(func(_, b gjson.Result) bool {
		parts = append(parts, b.Get("text").String())
		return true
	})
	return strings.Join(parts, "\n")
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, body)
	s.mu.Unlock()
	// The turn is the number of assistant messages so far: robust even
	// when the CLI rewrites a repeated tool_use in its history.
	turn := 0
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() == "assistant" {
			turn++
		}
		return true
	})
	step := Step{Text: Final}
	if script := s.scriptOf(body); turn < len(script) {
		step = script[turn]
	}
	if step.Before != nil {
		step.Before()
	}
	s.stream(w, gjson.GetBytes(body, "model").String(), turn, step)
}

// stream answers one turn as the server-sent events of the Messages API.
func (s *Server) stream(w http.ResponseWriter, model string, turn int, step Step) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_script_%d", turn), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	stop := "end_turn"
	if len(step.ToolUses) == 0 {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": step.Text}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	for i, tu := range step.ToolUses {
		stop = "tool_use"
		id := tu.ID
		if id == "" {
			id = fmt.Sprintf("toolu_script%04d_%d", turn, i)
		}
		input, _ := json.Marshal(tu.Input)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
			"type": "tool_use", "id": id, "name": tu.Name, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": string(input)}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
