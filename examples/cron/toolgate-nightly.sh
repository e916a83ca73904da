#!/usr/bin/env bash
# A nightly agent run for cron, gated by toolgate. It runs in cron's own
# environment: PATH=/usr/bin:/bin, HOME, no terminal, no XDG_RUNTIME_DIR.
# flock keeps a run that waits for an approval from overlapping the next
# tick; each run's report is kept (the newest $KEEP); the exit code and the
# report tell a timeout (retry later) from a denial (look at it).
#
#   # crontab -e
#   0 2 * * *  $HOME/bin/toolgate-nightly.sh >> $HOME/.local/state/toolgate/nightly.log 2>&1
#
# Settings come from ~/.config/toolgate/nightly.env when it exists (a shell
# file, sourced), else from the environment:
#   PROJECT           where claude works (default ~/src/project)
#   TASK              the prompt
#   POLICY            the policy (default: toolgate's own, ~/.config/toolgate/policy.json)
#   APPROVAL_TIMEOUT  how long an ask waits for a person (default 45m)
#   KEEP              how many reports to keep (default 30)
#   TOOLGATE, CLAUDE  the executables, when they are not found below
# and what claude needs, exported (export ANTHROPIC_API_KEY=...).
#
# Asks reach your desktop's approvers (toolgate watch, notify, pending): a
# cron run and your desktop session share one daemon.
set -uo pipefail
umask 077

config=${XDG_CONFIG_HOME:-$HOME/.config}/toolgate
state=${XDG_STATE_HOME:-$HOME/.local/state}/toolgate
log() { echo "$(date -Is) $*"; }

if [ -r "$config/nightly.env" ]; then
  # shellcheck source=/dev/null
  . "$config/nightly.env"
fi
PROJECT=${PROJECT:-$HOME/src/project}
TASK=${TASK:-"Update the dependencies and fix what breaks."}
APPROVAL_TIMEOUT=${APPROVAL_TIMEOUT:-45m}
KEEP=${KEEP:-30}

# cron's PATH has neither toolgate nor claude: look where they are installed.
export PATH="$HOME/.local/bin:$HOME/bin:$HOME/go/bin:/usr/local/bin:$PATH"
TOOLGATE=${TOOLGATE:-$(command -v toolgate)}
if [ -z "${CLAUDE:-}" ]; then
  # claude on PATH, or the release toolgate demo installed.
  CLAUDE=$(command -v claude || ls -1td "$HOME"/.cache/toolgate/claude-code/*/node_modules/.bin/claude 2>/dev/null | head -n 1)
fi
if [ ! -x "$TOOLGATE" ]; then
  log "toolgate not found (PATH=$PATH); claude did not run: set TOOLGATE=/path/to/toolgate in $config/nightly.env"
  exit 69
fi
if [ ! -x "$CLAUDE" ]; then
  log "claude not found (PATH=$PATH); it did not run: set CLAUDE=/path/to/claude in $config/nightly.env"
  exit 69
fi
if ! command -v flock >/dev/null 2>&1; then
  log "flock (util-linux) is missing; nothing ran: install it (Debian: apt-get install util-linux)"
  exit 69
fi

mkdir -p "$state/nightly"
exec 9>"$state/nightly.lock"
if ! flock -n 9; then
  log "the previous run is still going (waiting for an approval?); skipping this tick"
  exit 0
fi

cd "$PROJECT" || { log "no project at $PROJECT; nothing ran: set PROJECT in $config/nightly.env"; exit 66; }
run=$state/nightly/$(date +%Y%m%dT%H%M%S)-$$
report=$run.report.json
policy=()
if [ -n "${POLICY:-}" ]; then policy=(--policy "$POLICY"); fi

# claude's result goes beside the report; toolgate's lines (an ask, the
# summary) go to the log. No terminal: stdin is /dev/null.
"$TOOLGATE" run "${policy[@]}" --report "$report" --approval-timeout "$APPROVAL_TIMEOUT" \
  -- "$CLAUDE" -p --output-format json "$TASK" > "$run.claude.json" < /dev/null 9>&-
code=$?

# Keep the newest $KEEP runs (a report and claude's result each).
ls -1t "$state"/nightly/*.claude.json 2>/dev/null | tail -n +"$((KEEP + 1))" | while read -r old; do
  rm -f -- "$old" "${old%.claude.json}.report.json"
done

denied() {
  # Which calls were denied or expired, and why (jq when it is there).
  if command -v jq >/dev/null 2>&1; then
    jq -r '.calls[] | select(.effect == "deny") | "  \(.tool_name) \(.reason_code) \(.rule_id // "")"' "$report"
  else
    grep -o '"reason_code": "[a-z_]*"' "$report" | sort | uniq -c
  fi
}

case $code in
  0)  log "done; nothing was denied; report: $report" ;;
  75) log "nobody approved in time (approval_expired); the next tick asks again; report: $report"
      denied ;;
  77) log "calls were denied; look at them before the next run; report: $report"
      denied ;;
  64) log "toolgate refused the command line; claude did not run (see the line above)" ;;
  66) log "no policy; claude did not run: toolgate policy init writes one (--profile ci for unattended runs), or set POLICY" ;;
  69) log "the gate could not start; claude did not run: toolgate doctor says why" ;;
  73) log "the report cannot be written to $report; claude did not run" ;;
  78) log "the policy is invalid; claude did not run: toolgate policy check ${POLICY:-$config/policy.json}" ;;
  *)  log "claude failed on its own (exit $code); its output: $run.claude.json" ;;
esac
exit "$code"
