package watch

import (
	"errors"
	"time"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/client"
)

// ruleOf names the rule that asked.
func ruleOf(d api.ApprovalDetail) string {
	if d.Approval.MatchedRule == nil {
		return "the default"
	}
	return "rule " + *d.Approval.MatchedRule
}

// left is the time until an approval expires, rounded for a person.
func left(d api.ApprovalDetail, now time.Time) string {
	l := d.Approval.ExpiresAt.Sub(now)
	if l <= 0 {
		return "expiring"
	}
	return l.Round(time.Second).String()
}

// outcome says how an approval that is no longer pending ended.
func outcome(d api.ApprovalDetail) string {
	if d.Decision != nil && d.Decision.Actor != "" {
		return d.Approval.Status + " by " + d.Decision.Actor
	}
	return d.Approval.Status
}

// decisionError is the daemon's reason for refusing a decision.
func decisionError(err error) string {
	var se *client.StatusError
	if errors.As(err, &se) && se.Err.Code == "not_found" {
		return "no such approval"
	}
	if errors.As(err, &se) {
		return se.Err.Message
	}
	return err.Error()
}
