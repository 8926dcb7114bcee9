#!/usr/bin/env bash
# The gate on real runs: two comparisons of the same commit must give SAME, and one with a
# deliberately bad launch config (triton-dense partial.BLOCK_N=16, 4 splits) must give SLOWER.
#   bash scripts/gate_acceptance.sh OUTDIR [WORKLOAD] [ROUNDS]
set -u
out=${1:?usage: scripts/gate_acceptance.sh OUTDIR [WORKLOAD] [ROUNDS]}
W=${2:-qwen2.5-7b-l14-32k}
rounds=${3:-10}
[ -e "$W" ] && W=$(cd "$(dirname "$W")" && pwd)/$(basename "$W")  # a file path survives lib.sh's cd
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
echo '{"triton-dense": {"partial": {"BLOCK_N": 16, "NUM_SPLITS": 4}}}' > "$out/slowed_config.json"
# three methods per run (the two-method start-order artifact); GATE_EXTRA='' on a CPU machine
read -r -a extra <<< "${GATE_EXTRA---method cudnn}"
args=(--method triton-dense "${extra[@]}" --baseline flash --workload "$W" --rounds "$rounds")
step gate_run_base kprof compare "${args[@]}" --out "$out/base.json"
step gate_run_same kprof compare "${args[@]}" --out "$out/same.json"
step gate_run_slowed kprof compare "${args[@]}" --config "$out/slowed_config.json" --out "$out/slowed.json"
# the gate's own exit code is the verdict (0 SAME/FASTER, 1 SLOWER, 2 UNCERTAIN): record, don't fail
kprof gate --baseline "$out/base.json" --candidate "$out/same.json" --summary-md "$out/gate_same.md" \
  2>&1 | tee "$out/gate_same.log"; echo "gate same: exit ${PIPESTATUS[0]} (expected 0)"
kprof gate --baseline "$out/base.json" --candidate "$out/slowed.json" --summary-md "$out/gate_slowed.md" \
  2>&1 | tee "$out/gate_slowed.log"; echo "gate slowed: exit ${PIPESTATUS[0]} (expected 1)"
echo "gate_acceptance: overall status $status (logs in $out)"
exit $status
