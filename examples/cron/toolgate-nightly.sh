#!/usr/bin/env bash
# A nightly agent run for cron, gated by toolgate. flock keeps a run that
# waits for an approval from overlapping the next tick; the exit code and the
# JSON report tell a timeout (retry later) from a denial (look at it).
#
#   # crontab -e
#   0 2 * * *  $HOME/bin/toolgate-nightly.sh >> $HOME/.local/state/toolgate/nightly.log 2>&1
#
# Environment: TOOLGATE (the toolgate binary), PROJECT (where claude works),
# TASK (the prompt), POLICY, APPROVAL_TIMEOUT.
set -uo pipefail

TOOLGATE=${TOOLGATE:-toolgate}
PROJECT=${PROJECT:-$HOME/src/project}
TASK=${TASK:-"Update the dependencies and fix what breaks."}
POLICY=${POLICY:-$HOME/.config/toolgate/policy.json}
APPROVAL_TIMEOUT=${APPROVAL_TIMEOUT:-45m}
LOCK=${XDG_RUNTIME_DIR:-/tmp}/toolgate-nightly.lock
REPORT=$(mktemp "${TMPDIR:-/tmp}/toolgate-nightly.XXXXXX.json")
trap 'rm -f "$REPORT"' EXIT

exec 9>"$LOCK"
if ! flock -n 9; then
  echo "$(date -Is) the previous run is still going (waiting for an approval?); skipping this tick"
  exit 0
fi

cd "$PROJECT" || exit 66
"$TOOLGATE" run --policy "$POLICY" --report "$REPORT" --approval-timeout "$APPROVAL_TIMEOUT" \
  -- claude -p --output-format json "$TASK" > /dev/null 9>&-
code=$?

denied() {
  # Which calls were denied, and why (jq when it is there, grep when not).
  if command -v jq >/dev/null 2>&1; then
    jq -r '.calls[] | select(.effect == "deny") | "  \(.tool_name) \(.reason_code) \(.rule_id // "")"' "$REPORT"
  else
    grep -o '"reason_code": "[a-z_]*"' "$REPORT" | sort | uniq -c
  fi
}

case $code in
  0)  echo "$(date -Is) done; nothing was denied" ;;
  75) echo "$(date -Is) nobody approved in time (approval_expired); the next tick asks again"
      denied ;;
  77) echo "$(date -Is) calls were denied; look at them before the next run:"
      denied ;;
  69) echo "$(date -Is) the gate could not start; claude did not run: toolgate doctor says why" ;;
  78) echo "$(date -Is) the policy is invalid; claude did not run: toolgate policy check $POLICY" ;;
  *)  echo "$(date -Is) claude failed on its own (exit $code)" ;;
esac
exit "$code"
