package ledger

import (
	"fmt"
	"testing"
	"time"
)

// A publisher that reads the chain each time Appended says there is more
// (as the fleet's does) sees every event: the signal comes once a reader
// outside the committer can read the batch, never before, or the last
// events of a burst would wait for the next write.
func TestAppendedComesOnceEventsAreReadable(t *testing.T) {
	l, _ := openTest(t, nil)
	const n = 200
	seen := make(chan uint64, 1)
	go func() {
		var cursor uint64
		for range l.Appended() {
			evs, err := l.EventsAfter(ctx, cursor, 1000)
			if err != nil {
				t.Error(err)
				return
			}
			if len(evs) > 0 {
				cursor = evs[len(evs)-1].Seq
				select {
				case <-seen:
				default:
				}
				seen <- cursor
			}
		}
	}()
	for i := range n {
		mustPropose(t, l, fmt.Sprintf("toolu_%d", i), `{"command":"ls"}`)
		head, _ := l.Head()
		// The publisher must reach the head without another write.
		deadline := time.After(10 * time.Second)
		for got := uint64(0); got < head.Seq; {
			select {
			case got = <-seen:
			case <-deadline:
				t.Fatalf("write %d: the publisher stopped at event %d, the head is %d", i, got, head.Seq)
			}
		}
	}
}
