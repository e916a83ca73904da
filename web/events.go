package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// handleEvents streams the state (server-sent events): at once, then on
// every change.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, _ string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	first := s.state
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.subs, ch); s.mu.Unlock() }()
	if first == nil {
		st, err := s.cfg.Queue.State(r.Context())
		if err != nil {
			http.Error(w, "the queue is out of reach: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		first, _ = json.Marshal(st)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(data []byte) bool {
		_, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", data)
		flusher.Flush()
		return err == nil
	}
	if !send(first) {
		return
	}
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case data := <-ch:
			if !send(data) {
				return
			}
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// Run follows the queue until ctx ends: on every change it sends the new
// state to every page and new asks to the webhook. A lost source is
// followed again after a pause.
func (s *Server) Run(ctx context.Context) {
	for ctx.Err() == nil {
		changes, err := s.cfg.Queue.Changes(ctx)
		if err != nil {
			s.log.Warn("web: the queue is out of reach; retrying", "err", err)
		} else {
			s.refresh(ctx)
			for range changes {
				s.refresh(ctx)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

func (s *Server) refresh(ctx context.Context) {
	st, err := s.cfg.Queue.State(ctx)
	if err != nil {
		s.log.Warn("web: read the queue", "err", err)
		return
	}
	data, _ := json.Marshal(st)
	s.mu.Lock()
	s.state = data
	for ch := range s.subs {
		select {
		case <-ch: // drop a stale state nobody read yet
		default:
		}
		ch <- data
	}
	var fresh []Item
	for _, it := range st.Pending {
		if !s.seen[it.ID] {
			s.seen[it.ID] = true
			fresh = append(fresh, it)
		}
	}
	s.mu.Unlock()
	if s.cfg.Webhook != "" {
		for _, it := range fresh {
			s.announce(ctx, it)
		}
	}
}
