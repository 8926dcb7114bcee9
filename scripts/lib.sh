# Shared by the GPU scripts: `step NAME CMD...` runs a command, tees it to $out/NAME.log,
# prints its exit code and duration, and sets status=1 on failure (the script goes on). A step
# running past STEP_TIMEOUT seconds (default 300) gets SIGTERM, and SIGKILL 10 s later, so one
# hang cannot eat a device call.
# Sourced by the GPU scripts once they have set `out` (the log folder): makes it absolute, moves
# to the repository root, and sets py (python) and status=0.
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export PYTHONUNBUFFERED=1 COLUMNS=160
py=${PYTHON:-python3}
status=0
kprof() { "$py" -m kprof "$@"; }
step() {
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  [ "$1" = kprof ] && set -- "$py" -m kprof "${@:2}"  # timeout runs programs, not shell functions
  timeout -k 10 "${STEP_TIMEOUT:-300}" "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: rc=$rc ($((SECONDS - t0)) s)"
  [ "$rc" -eq 0 ] || status=1
}
