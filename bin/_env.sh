# Shared set-up for bin/acp and bin/test: a project virtual environment (made once,
# refreshed when pyproject.toml changes) and, when npm is present, the pinned official
# TypeScript SDK in .cache/npm (it ships the official ACP JSON Schemas the generator and
# tests read).
#
# PYTHON picks the interpreter: a command (python3.12), a path, or a version (3.10,
# looked up on PATH and then in pyenv). Without it the newest python3.1x on PATH is
# used, in .venv. Each other version gets its own venv, .venv-X.Y, so runs on several
# versions never clobber each other (a requested version equal to .venv's uses .venv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TS_SDK_VERSION="2.4.0"
ZOD_VERSION="4.6.7"

usable_python() {
  command -v "$1" >/dev/null 2>&1 \
    && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1
}

python_version() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# The interpreter PYTHON names (see above), or the newest one on PATH; fails loudly.
pick_python() {
  local want="${PYTHON:-}" py
  if [ -n "$want" ]; then
    local candidates=("$want")
    if [[ "$want" =~ ^[0-9]+\.[0-9]+$ ]]; then
      candidates=("python$want")
      if command -v pyenv >/dev/null 2>&1; then
        for py in "$(pyenv root)/versions/$want".*/bin/python "$(pyenv root)/versions/$want"/bin/python; do
          candidates+=("$py")
        done
      fi
    fi
    for py in "${candidates[@]}"; do
      if usable_python "$py"; then command -v "$py"; return 0; fi
    done
    echo "PYTHON=$want: no such Python 3.10+ interpreter (tried: ${candidates[*]})" >&2
    return 1
  fi
  for py in python3.13 python3.12 python3.11 python3.10 python3; do
    if usable_python "$py"; then command -v "$py"; return 0; fi
  done
  echo "acpwire needs Python 3.10 or newer on PATH (or PYTHON=...)" >&2
  return 1
}

VENV="$ROOT/.venv"
if [ -n "${PYTHON:-}" ]; then
  PYTHON_BIN="$(pick_python)"
  PYTHON_VERSION="$(python_version "$PYTHON_BIN")"
  if ! [ -x "$VENV/bin/python" ] || [ "$(python_version "$VENV/bin/python")" != "$PYTHON_VERSION" ]; then
    VENV="$ROOT/.venv-$PYTHON_VERSION"
  fi
fi

# Makes the venv and installs the project (editable) with these extras; a "dev" venv
# already has everything the "cli" extra brings.
ensure_venv() {
  local extras="${1:-dev}" stamp
  if [ ! -x "$VENV/bin/python" ]; then
    "${PYTHON_BIN:-$(pick_python)}" -m venv "$VENV"
  fi
  for stamp in "$VENV/.acpwire-$extras" "$VENV/.acpwire-dev"; do
    if [ -f "$stamp" ] && ! [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then return 0; fi
  done
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2 || true
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[$extras]" >&2
  touch "$VENV/.acpwire-$extras"
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
