package daemon

import (
	"sync"

	"github.com/toolgate/toolgate/api"
)

// broker tells watchers about approval events and wakes the calls that
// wait on an approval.
type broker struct {
	mu       sync.Mutex
	watchers map[chan api.WatchEvent]struct{}
	waiters  map[string]map[chan struct{}]struct{}
}

func newBroker() *broker {
	return &broker{watchers: map[chan api.WatchEvent]struct{}{}, waiters: map[string]map[chan struct{}]struct{}{}}
}

// publish sends ev to every watcher. A watcher too slow to keep up is
// dropped (its stream ends; it reconnects and gets a fresh snapshot)
// rather than blocking the gate.
func (b *broker) publish(ev api.WatchEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.watchers {
		select {
		case ch <- ev:
		default:
			delete(b.watchers, ch)
			close(ch)
		}
	}
}

// watch subscribes to events until cancel is called.
func (b *broker) watch() (<-chan api.WatchEvent, func()) {
	ch := make(chan api.WatchEvent, 256)
	b.mu.Lock()
	b.watchers[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.watchers[ch]; ok {
			delete(b.watchers, ch)
			close(ch)
		}
	}
}

// waitFor returns a channel closed when the approval id changes; subscribe
// before reading the record, so that no change is missed.
func (b *broker) waitFor(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	if b.waiters[id] == nil {
		b.waiters[id] = map[chan struct{}]struct{}{}
	}
	b.waiters[id][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.waiters[id][ch]; ok {
			delete(b.waiters[id], ch)
			close(ch)
		}
		if len(b.waiters[id]) == 0 {
			delete(b.waiters, id)
		}
	}
}

// changed wakes everything waiting on the approval id.
func (b *broker) changed(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.waiters[id] {
		close(ch)
	}
	delete(b.waiters, id)
}
