package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/ledger"
	"github.com/urfave/cli/v2"
)

func auditVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check that the audit chain is unbroken",
		Description: `Walks the whole chain and reports the first broken link: the event number and
whether it was modified, is missing, is out of order, or the chain was cut
short. The daemon reads the ledger (it is the only process that opens it), so
this works while sessions run; for a ledger no daemon serves (--ledger, a copy
kept for inspection) a private daemon is started for it and stopped after.

An exported file (--file) is checked twice: its own chain, then against the
ledger's record of that export (every export is recorded in the chain, and
the file's last line names the record). A file whose tail was cut, or whose
chain was rewritten and hashed again, fails the second check. --offline
checks the file's chain alone (no ledger at hand): that finds a modified,
missing or reordered event, but neither a cut tail nor a chain rewritten
whole. --anchor SEQ:HASH (a run report's audit_head, kept where the model
cannot write) checks that event SEQ has that hash, in the file or in the
ledger: that finds a chain rewritten whole, even without the ledger or with a
ledger rewritten too. A chain pruned (audit prune) is checked from its base,
the last event removed, whose hash its first event carries; an anchor older
than the base cannot be checked (problem "pruned"). Quiet when all holds;
--json prints the event count, the head and the base either way.

EXAMPLES
   toolgate audit verify
   toolgate audit verify --ledger /srv/backup/toolgate-ledger
   toolgate audit verify --file audit.jsonl --json
   toolgate audit verify --file audit.jsonl --offline
   toolgate audit verify --file audit.jsonl --offline --anchor "$(jq -r '"\(.audit_head.seq):\(.audit_head.hash)"' run.json)"

EXIT STATUS
   0    the chain is intact
   65   the chain is broken (EX_DATAERR)
   64   bad command line
   66   no ledger or file there
   69   the daemon cannot be reached or started, or another process holds the ledger (EX_UNAVAILABLE)`,
		Flags: []cli.Flag{ledgerFlag(),
			&cli.StringFlag{Name: "file", Usage: "verify an exported chain (JSON lines) instead of a ledger"},
			&cli.BoolFlag{Name: "offline", Usage: "with --file: check the file's chain alone, not against the ledger's record of the export"},
			&cli.StringSliceFlag{Name: "anchor", Usage: "SEQ:HASH, an event the chain must hold with that hash (a run report's audit_head); repeatable"},
			jsonFlag()},
		Action: func(cliCtx *cli.Context) error {
			ledgerDir := ""
			if cliCtx.IsSet("ledger") {
				ledgerDir = cliCtx.String("ledger")
			}
			anchors, err := parseAnchors(cliCtx.StringSlice("anchor"))
			if err != nil {
				return err
			}
			return runAuditVerify(cliCtx.Context, cliCtx.App.Writer, verifyOptions{ledgerDir: ledgerDir, file: cliCtx.String("file"),
				offline: cliCtx.Bool("offline"), asJSON: cliCtx.Bool("json"), anchors: anchors})
		},
	}
}

type verifyJSON struct {
	SchemaVersion int `json:"schema_version"`
	api.VerifyResult
}

type verifyOptions struct {
	ledgerDir, file string
	offline, asJSON bool
	anchors         []api.ChainHead
}

// parseAnchors reads --anchor values, SEQ:HASH.
func parseAnchors(values []string) ([]api.ChainHead, error) {
	var out []api.ChainHead
	for _, v := range values {
		seq, hash, ok := strings.Cut(v, ":")
		n, err := strconv.ParseUint(seq, 10, 64)
		if !ok || err != nil || n == 0 || len(hash) != 64 {
			return nil, usagef("--anchor %q: want SEQ:HASH, as a report's audit_head gives them (seq, then the 64 hex digits of hash)", v)
		}
		out = append(out, api.ChainHead{Seq: n, Hash: hash})
	}
	return out, nil
}

// checkAnchors checks that the chain holds each anchor's event with its
// hash; event gives an event's hash, or "" when the chain has none.
func checkAnchors(anchors []api.ChainHead, res api.VerifyResult, event func(seq uint64) (string, error)) error {
	for _, a := range anchors {
		switch {
		case a.Seq == res.Base && res.Base > 0 && a.Hash == res.BaseHash:
			continue // the base of a pruned chain, which its first event names
		case a.Seq <= res.Base:
			return &api.ChainError{Seq: a.Seq, Problem: "pruned", Detail: fmt.Sprintf("the chain was pruned up to event %d: the anchor at event %d cannot be checked (audit prune printed the anchor of what remains)", res.Base, a.Seq)}
		}
		hash, err := event(a.Seq)
		switch {
		case err != nil:
			return err
		case hash == "":
			return &api.ChainError{Seq: a.Seq, Problem: "truncated", Detail: fmt.Sprintf("the chain has no event %d, which the anchor names", a.Seq)}
		case hash != a.Hash:
			return &api.ChainError{Seq: a.Seq, Problem: "rewritten", Detail: fmt.Sprintf("event %d does not have the hash the anchor names: the chain was rewritten", a.Seq)}
		}
	}
	return nil
}

// fileEvents reads the hash of every anchored event of an export file.
func fileEvents(path string, anchors []api.ChainHead) (func(uint64) (string, error), error) {
	want := map[uint64]bool{}
	for _, a := range anchors {
		want[a.Seq] = true
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	found := map[uint64]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if seq := gjson.GetBytes(sc.Bytes(), "seq").Uint(); want[seq] {
			found[seq] = gjson.GetBytes(sc.Bytes(), "hash").String()
		}
	}
	return func(seq uint64) (string, error) { return found[seq], nil }, sc.Err()
}

func runAuditVerify(ctx context.Context, w io.Writer, opts verifyOptions) error {
	var res api.VerifyResult
	var err error
	if opts.file != "" {
		res, err = verifyFile(ctx, opts)
	} else {
		err = withAuditor(ctx, opts.ledgerDir, func(c *client.Client) error {
			var err error
			if res, err = c.VerifyAudit(ctx); err != nil || res.Broken != nil {
				return err
			}
			return checkAnchors(opts.anchors, res, func(seq uint64) (string, error) {
				raw, err := c.AuditEvent(ctx, seq)
				var se *client.StatusError
				if errors.As(err, &se) && se.Err.Code == "not_found" {
					return "", nil
				}
				return gjson.GetBytes(raw, "hash").String(), err
			})
		})
	}
	if err != nil && !errors.As(err, &res.Broken) {
		return err
	}
	if res.Broken != nil {
		res.Valid = false
	}
	if opts.asJSON {
		if err := writeJSON(w, verifyJSON{1, res}); err != nil {
			return err
		}
		if res.Broken != nil {
			return &exitStatus{exitDataErr}
		}
		return nil
	}
	if res.Broken != nil {
		return &dataError{fmt.Errorf("%w\nThe events before it are intact; keep a copy of the ledger for inspection", res.Broken)}
	}
	return nil
}

// verifyFile checks an export's chain and, unless offline, the ledger's
// record of that export.
func verifyFile(ctx context.Context, opts verifyOptions) (api.VerifyResult, error) {
	f, err := os.Open(opts.file)
	if err != nil {
		return api.VerifyResult{}, err
	}
	defer f.Close()
	res, trailer, err := ledger.VerifyExport(f)
	if err != nil {
		return res, err
	}
	if len(opts.anchors) > 0 {
		events, err := fileEvents(opts.file, opts.anchors)
		if err != nil {
			return res, err
		}
		if err := checkAnchors(opts.anchors, res, events); err != nil {
			return res, err
		}
	}
	if opts.offline {
		return res, nil
	}
	if trailer == nil {
		return res, ledger.CheckExport(res, nil, ledger.Event{})
	}
	var recorded ledger.Event
	err = withAuditor(ctx, opts.ledgerDir, func(c *client.Client) error {
		raw, err := c.AuditEvent(ctx, trailer.Event)
		var se *client.StatusError
		if errors.As(err, &se) && se.Err.Code == "not_found" {
			return nil // no such event: CheckExport says so
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &recorded)
	})
	if err != nil {
		return res, fmt.Errorf("%w\nTry: --offline checks the file's chain alone", err)
	}
	if err := ledger.CheckExport(res, trailer, recorded); err != nil {
		return res, err
	}
	res.Export = trailer
	return res, nil
}
