package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/toolgate/toolgate/paths"
)

// writeRecord leaves the record that lets every client of the ledger find
// this daemon, whatever runtime directory its environment names (see
// paths.Paths.Live). It is replaced whole, 0600, and removed at exit.
func writeRecord(p paths.Paths) (remove func(), err error) {
	rec := paths.DaemonRecord{PID: os.Getpid(), RuntimeDir: p.RuntimeDir, Started: time.Now().UTC()}
	data, _ := json.Marshal(rec)
	tmp, err := os.CreateTemp(p.LedgerDir(), ".daemon-*.json") // CreateTemp makes it 0600
	if err != nil {
		return nil, fmt.Errorf("daemon record: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.DaemonRecordFile())
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("daemon record: %w", err)
	}
	return func() {
		// Only our own: a record another daemon wrote since stays.
		if now, err := p.ReadDaemonRecord(); err == nil && now.PID == rec.PID {
			os.Remove(p.DaemonRecordFile())
		}
	}, nil
}

// heldBy says which daemon holds a ledger this one could not open, from its
// record, so that the person knows where it is.
func heldBy(p paths.Paths) string {
	rec, err := p.ReadDaemonRecord()
	if err != nil {
		return ""
	}
	return fmt.Sprintf(": the toolgate daemon pid %d serves it, with its sockets in %s", rec.PID, rec.RuntimeDir)
}
