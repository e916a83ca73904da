package ledger

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
)

// Review 13, attack I: a file cut exactly at an earlier export's head,
// followed by that export's (genuine) last line, is byte for byte that
// earlier export, and verifies as such: verify names the export it is
// (--json: export.event, exported_at, by_pid, by_exe), and a run report's
// anchor after it (--anchor) finds it short. The daemon makes exports for
// people only (a gated session's process is refused), so that no export
// is the model's to cut a later one back to.
func TestReviewCutExportEndsWithAnEarlierExportsLastLine(t *testing.T) {
	l := fill(t, 3)
	var early bytes.Buffer // an export, before the calls
	if err := l.Export(ctx, &early, api.Incident{PID: 4242}); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 8; i++ {
		mustPropose(t, l, fmt.Sprintf("toolu_late_%d", i), `{"n":1}`)
	}
	var late bytes.Buffer // the person's export, of everything
	if err := l.Export(ctx, &late, api.Incident{PID: 1}); err != nil {
		t.Fatal(err)
	}
	earlyLines := strings.Split(strings.TrimSpace(early.String()), "\n")
	lateLines := strings.Split(strings.TrimSpace(late.String()), "\n")
	forged := strings.Join(append(append([]string{}, lateLines[:3]...), earlyLines[len(earlyLines)-1]), "\n")
	res, trailer, err := VerifyExport(strings.NewReader(forged))
	if err != nil {
		t.Fatalf("the file's own chain: %v", err)
	}
	recorded, err := l.Event(ctx, trailer.Event)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckExport(res, trailer, recorded); err != nil {
		t.Fatalf("the earlier export, as the cut file now is: %v", err)
	}
	if trailer.ByPID != 4242 || trailer.HeadSeq != res.Events {
		t.Errorf("verify does not say which export the file is: %+v", trailer)
	}
	_, lateTrailer, _ := VerifyExport(strings.NewReader(late.String()))
	events := func(seq uint64) (string, error) { return "", nil } // the cut file holds no event after the early head
	_ = events
	if lateTrailer.HeadSeq <= res.Events {
		t.Errorf("the person's export ends at %d, the cut one at %d: an anchor at the later head finds it short", lateTrailer.HeadSeq, res.Events)
	}
}
