package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolgate/toolgate/api"
)

// History reads the recorded calls proposed in [since, until) (a zero
// bound is none) and calls fn with each item as it arrives; an error from
// fn ends the stream and is returned.
func (c *Client) History(ctx context.Context, since, until time.Time, fn func(api.HistoryItem) error) error {
	var q []string
	if !since.IsZero() {
		q = append(q, "since="+escape(since.UTC().Format(time.RFC3339Nano)))
	}
	if !until.IsZero() {
		q = append(q, "until="+escape(until.UTC().Format(time.RFC3339Nano)))
	}
	path := "/v1/history"
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	body, err := c.stream(ctx, path)
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(body, 64<<10))
	for {
		var item api.HistoryItem
		err := dec.Decode(&item)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &UnavailableError{SocketPath: c.socket(), Err: fmt.Errorf("history cut short: %w", err)}
		}
		if err := fn(item); err != nil {
			return err
		}
	}
}
