# Shared set-up for bin/acp and bin/test: a project virtual environment in
# .venv (made once, refreshed when pyproject.toml changes) and, when npm is
# present, the pinned official TypeScript SDK in .cache/npm (it ships the
# official ACP JSON Schemas the generator and tests read).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
TS_SDK_VERSION="2.4.0"
ZOD_VERSION="4.6.7"

pick_python() {
  for py in "${PYTHON:-}" python3.13 python3.12 python3.11 python3.10 python3; do
    [ -n "$py" ] || continue
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "acpwire needs Python 3.10 or newer on PATH" >&2
  return 1
}

ensure_venv() {
  local extras="${1:-dev}"
  local stamp="$VENV/.acpwire-$extras"
  if [ ! -x "$VENV/bin/python" ]; then
    "$(pick_python)" -m venv "$VENV"
  fi
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2 || true
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[$extras]" >&2
    touch "$stamp"
  fi
}

ensure_ts_sdk() {
  local dir="$ROOT/.cache/npm"
  if [ -f "$dir/node_modules/@agentclientprotocol/sdk/package.json" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "npm not found: the official TypeScript SDK (and its schema copy) is not installed" >&2
    return 0
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"acpwire-peers","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --silent --no-audit --no-fund \
      "@agentclientprotocol/sdk@$TS_SDK_VERSION" "zod@$ZOD_VERSION" >&2) \
    || echo "npm install of @agentclientprotocol/sdk@$TS_SDK_VERSION failed; tests that need it will skip" >&2
}
