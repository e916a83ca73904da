#!/usr/bin/env bash
# A nightly agent run for cron, gated by toolgate. It runs in cron's own
# environment: PATH=/usr/bin:/bin, HOME, no terminal, no XDG_RUNTIME_DIR.
#
# An ask does not hold the job: the run ends at once (--on-ask defer, exit
# 81) with the approval waiting for a person, and each tick first resumes
# what a person decided since (toolgate resume), then starts new work, unless
# something of this project still waits. flock keeps two ticks apart; each
# run's report is kept (the newest $KEEP); the exit code and the report tell
# waiting (81) from a timeout (75) from a denial (77).
#
#   # crontab -e
#   0 2 * * *  $HOME/bin/toolgate-nightly.sh >> $HOME/.local/state/toolgate/nightly.log 2>&1
#
# Settings come from ~/.config/toolgate/nightly.env when it exists (a shell
# file, sourced), else from the environment:
#   PROJECT           where claude works (default ~/src/project)
#   TASK              the prompt
#   POLICY            the policy (default: toolgate's own, ~/.config/toolgate/policy.json)
#   ON_ASK            defer (default): end the run and resume on a later tick;
#                     wait: hold the run until a person decides or the ask expires
#   APPROVAL_TIMEOUT  how long an ask waits for a person (default 45m; with
#                     defer, how long a person has before the call is denied)
#   KEEP              how many runs' files to keep (default 30)
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
ON_ASK=${ON_ASK:-defer}
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

mkdir -p "$state/nightly/resumed"
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

# Keep the newest $KEEP runs (each run's files share its prefix; $run.log,
# toolgate's lines, marks a run) and resumed sessions' reports.
rotate() {
  ls -1t "$state"/nightly/*.log 2>/dev/null | tail -n +"$((KEEP + 1))" | while read -r old; do
    rm -f -- "${old%.log}".*
  done
  ls -1t "$state"/nightly/resumed/*.json 2>/dev/null | tail -n +"$((KEEP + 1))" | xargs -r rm -f --
}

# 1. What a person decided since an earlier tick: claude goes on from where
# it stopped, once (a resume of the same session elsewhere is skipped).
# toolgate's lines and claude's output go to $run.resumed.txt, the list to
# $run.resume.json.
"$TOOLGATE" resume --project "$PROJECT" --json --report-dir "$state/nightly/resumed" \
  > "$run.resume.json" 2> "$run.resumed.txt" < /dev/null 9>&-
code=$?
resumed=$(grep -c '"outcome": "resumed"' "$run.resume.json")
waiting=$(grep -c '"outcome": "waiting"\|"exit_code": 81' "$run.resume.json")
if [ "$code" -ne 0 ] && [ "$code" -ne 81 ]; then
  log "resuming deferred sessions ended $code; see $run.resumed.txt and $run.resume.json"
elif [ "$resumed" -gt 0 ]; then
  log "resumed $resumed deferred session(s); reports in $state/nightly/resumed, output in $run.resumed.txt"
fi
if [ "$waiting" -gt 0 ]; then
  log "$waiting session(s) of $PROJECT still wait for a person (toolgate pending); no new work this tick"
  grep -h 'still waits for a person' "$run.resumed.txt"
  : > "$run.log"
  rotate
  exit 81
fi

# 2. New work. claude's result goes beside the report; toolgate's lines
# (an ask, the summary) to the log and to $run.log. No terminal: stdin is
# /dev/null.
"$TOOLGATE" run "${policy[@]}" --on-ask "$ON_ASK" --report "$report" --approval-timeout "$APPROVAL_TIMEOUT" \
  -- "$CLAUDE" -p --output-format json "$TASK" 2>&1 > "$run.claude.json" < /dev/null 9>&- | tee "$run.log" 9>&-
code=${PIPESTATUS[0]}
rotate

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
  81) id=$(grep -o '"approval_id": "[^"]*"' "$report" | head -n 1 | cut -d'"' -f4)
      log "an ask waits for a person: toolgate approve $id (or deny); the next tick goes on from there; report: $report" ;;
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
