#!/usr/bin/env bash
# Start N `acp serve` workers sharing one session store, for deploy/haproxy.cfg.
#
#   ACPWIRE_STORE=postgresql://acp:secret@db.internal/acp \
#   ACP_SERVE_TOKEN=... deploy/start-workers.sh [-n N] [-p BASE_PORT] [-H HOST] [-- SERVE_ARGS...]
#
# Worker i (1..N) listens on HOST:BASE_PORT+i (default 127.0.0.1:8101, 8102, ...) and
# sets the cookie ACPWORKER=wi, the name its `server` line in deploy/haproxy.cfg gives.
# Every worker must use the same store (ACPWIRE_STORE or --store in SERVE_ARGS) and the
# same tokens (ACP_SERVE_TOKEN, or --token in SERVE_ARGS, repeatable: one principal per
# token). SERVE_ARGS default to `--demo`; a stdio agent that keeps its sessions in the
# same store itself is `-- -- my-agent --stdio` (owners then stay per worker: see
# docs/scale-out.md). Ctrl-C (or SIGTERM) stops every worker.
set -euo pipefail

workers=3  # as many as deploy/haproxy.cfg names
base_port=8100
host=127.0.0.1
while getopts "n:p:H:h" opt; do
  case "$opt" in
    n) workers="$OPTARG" ;;
    p) base_port="$OPTARG" ;;
    H) host="$OPTARG" ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ "$#" -eq 0 ]; then set -- --demo; fi

if [ -z "${ACPWIRE_STORE:-}" ] && [[ " $* " != *" --store "* ]] && [[ " $* " == *" --demo "* ]]; then
  echo "start-workers: set ACPWIRE_STORE (postgresql://...) or pass --store: workers must share it" >&2
  exit 2
fi
if [ -z "${ACP_SERVE_TOKEN:-}" ] && [[ " $* " != *" --token "* ]] && [[ " $* " != *" --no-auth "* ]]; then
  echo "start-workers: set ACP_SERVE_TOKEN or pass --token: workers must share their tokens" >&2
  exit 2
fi
acp=(acp)
command -v acp >/dev/null 2>&1 || acp=(python -m acpwire.cli.main)

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait
}
trap stop INT TERM EXIT

for i in $(seq 1 "$workers"); do
  port=$((base_port + i))
  "${acp[@]}" serve --host "$host" --port "$port" --worker-cookie "ACPWORKER=w$i" "$@" \
    2> >(sed -u "s/^/w$i: /" >&2) &
  pids+=("$!")
  echo "start-workers: w$i on $host:$port (pid $!)" >&2
done
# Exit (stopping the others) as soon as any worker exits.
wait -n
echo "start-workers: a worker exited; stopping the others" >&2
