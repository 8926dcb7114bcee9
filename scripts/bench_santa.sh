#!/usr/bin/env bash
# SANTA++ on the H200: preparation, validation, launch-variant screen, tuning, stage timings and
# the full-protocol comparison (tuned and default configs), logs to OUTDIR.
#   bash scripts/bench_santa.sh OUTDIR [ROUNDS] [TUNE_BUDGET_S]
# ROUNDS defaults to the full protocol (20). Launch-config variants run in one comparison so
# they share rounds (and three or more methods avoid the two-method order artifact).
set -u
out=${1:?usage: scripts/bench_santa.sh OUTDIR [ROUNDS] [TUNE_BUDGET_S]}
rounds=${2:-20}
budget=${3:-20}
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=/tmp/kprof_qwen32k.safetensors
[ -f $W ] || kprof capture --synthetic qwen2.5-7b-l14-32k --out $W > "$out/capture.log" 2>&1 || status=1
step santa_prepare kprof santa prepare --workload $W
step santa_validate kprof validate --method santa --workload $W --realisations 3
step santa_validate_fp32 kprof validate --method santa:out=fp32 --workload $W --realisations 3
variants=(--method santa --method santa:topk.RADIX_BITS=1,merge.RADIX_BITS=1
          --method santa:topk.RADIX_BITS=4,merge.RADIX_BITS=4
          --method santa:topk.BLOCK_T=8192,topk.num_warps=16)
step santa_variants kprof compare "${variants[@]}" --baseline flash --workload $W --config default \
  --rounds 3 --out "$out/santa_variants.json"
STEP_TIMEOUT=$((budget * 3 + 120)) step santa_tune kprof tune --method santa --workload $W \
  --launch topk --launch merge --launch attend --budget-s "$budget" --finalists 2
step santa_compare kprof compare --method santa --method cudnn --baseline flash --workload $W \
  --rounds "$rounds" --out "$out/santa_compare.json"
step santa_stages kprof stages --method santa --workload $W --rounds "$rounds" --out "$out/santa_stages.json"
step santa_validate_k_eq_m kprof validate --method santa:k=1000000 --workload $W --realisations 1
mkdir -p "$out/tuned" && cp profiles/tuned/santa__* "$out/tuned/" 2>/dev/null
echo "bench_santa: overall status $status (logs in $out)"
exit $status
