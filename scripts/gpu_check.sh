#!/usr/bin/env bash
# Run every GPU check in one go on a CUDA machine; all logs go to OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR [full|quick|santa|fathom|ncu|acceptance|screen|tune|fathom-screen|fathom-tune|fathom-stages|fathom-retune|fathom-fused|fathom-final|fathom-tests|fathom-probe|chain-screen|chain-profile|chain-attend|santa-final|gated-final|gate-check|session-check|santa-screen|issue-final|fathom-pieces]
# Installs kprof without touching the machine's torch/triton, prints `kprof env`, runs the
# `-m gpu` tests, then by mode: full = dense baselines and the timing protocol (full-protocol
# comparisons, A/A checks, stages, graph and host-bound modes, order probe, dense benchmark;
# about 5 minutes); quick = the same without full-protocol runs; santa = every kernel test on
# the GPU, scripts/bench_santa.sh, then ncu tables for santa and flash beside their event-timed
# latency; fathom = the Fathom benchmarks (gather, compare with host and HBM index, stages); ncu =
# ncu tables only; screen = launch-variant screens (SANTA++ stage sweep, gather config sweep,
# Fathom stages and HBM index) plus full ncu sections of the SANTA++ launches; tune = kprof tune
# of the SANTA++ launches plus a selection screen; fathom-screen = Fathom kernel tests on the GPU
# and a launch-variant screen at 1M tokens (scan tiles, top-k pruning, fetch, attend), with a
# third argument `tune` followed by the fathom-tune tuning steps (not its comparison); fathom-tune = kprof tune of the Fathom launches
# at 1M tokens; fathom-stages = resumed gather/scan32 tunes and the stage breakdowns at 1M;
# fathom-retune = the three Fathom tunes afresh plus the tuned comparison; fathom-fused = Fathom
# selection and decode tests on the GPU, the 1M-token top-k and fetch tunes of Fathom and scan32,
# and Fathom/sparq16 against scan32 at the tuned configs; fathom-final = the Fathom issue's
# measurements at 1M tokens (tests, a variant screen, comparisons, stages, HBM index, gather);
# fathom-tests = every Fathom kernel test on the GPU (compile-heavy: most of a call); fathom-probe
# = the pipelined step eager and in CUDA-graph replays, and the HBM-index pair; chain-screen =
# SANTA++ tests, and launch-chain variants (PDL, merge by score word) against Flash, then Fathom
# against scan32 eagerly at 4 and 8 pieces; chain-profile = the SANTA++ chain's marginal launch
# costs with and without PDL, launch variants under PDL, and the Fathom GPU tests not yet run;
# chain-attend = SANTA++ tests, validation, variants and chain costs after the attend search change;
# santa-final = the SANTA++ issue's full-protocol comparison, stages and chain costs; gated-final =
# the host gate's GPU tests, then the SANTA++ and Fathom issue comparisons behind it; gate-check =
# the time-bounded gate's GPU tests, the harness tests and a short SANTA++ comparison behind it;
# session-check = the host gate's GPU tests, then both issue comparisons at the defaults, eager and in
# CUDA-graph replays, a SANTA++ launch-config screen and its chain costs; santa-screen = the SANTA++,
# gate and harness GPU tests, then a launch-config screen around the current attend; issue-final =
# both issues' measurements at the defaults (SANTA++ validation, comparisons eager and in graph
# replays, stages, chain costs, ncu durations; Fathom against scan32 eager and in replays);
# fathom-pieces = the pipelined step at 3, 4 and 6 KV-head ranges against scan32;
# acceptance = the headline SANTA++/Fathom comparisons, SANTA++ tuning and stages.
# Each mode fits one 10-minute device call. Exits non-zero if any step failed (all steps still run).
set -u
out=${1:?usage: scripts/gpu_check.sh OUTDIR [full|quick|santa|fathom|ncu|acceptance|screen|tune|fathom-screen|fathom-tune|fathom-stages|fathom-retune|fathom-fused|fathom-final|fathom-tests|fathom-probe|chain-screen|chain-profile|chain-attend|santa-final|gated-final|gate-check|session-check|santa-screen|issue-final|fathom-pieces]}
mode=${2:-full}
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=qwen2.5-7b-l14-32k
# ncu_tables WORKLOAD RESULT: Table 14 for santa and flash beside RESULT's event-timed medians, plus
# the first capture re-exported as the details page and in auto units (real fixtures for tests/)
ncu_tables() {
  local ncu_bin m rep
  ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for m in santa flash; do
    STEP_TIMEOUT=100 step ncu_$m kprof ncu --method $m --workload "$1" --captures 3 --out "$out/ncu_$m" \
      --latency-from "$2"
    rep="$out/ncu_$m/capture0.ncu-rep"
    [ -f "$rep" ] || continue
    "$ncu_bin" --import "$rep" --csv --page details > "$out/ncu_${m}_details.csv" 2>&1
    "$ncu_bin" --import "$rep" --csv --page raw --print-units auto > "$out/ncu_${m}_raw_auto.csv" 2>&1
    step ncu_import_$m kprof ncu import "$rep" --json
  done
}
# tune_santa WORKLOAD SECONDS: kprof tune of the five SANTA++ launches; topk screens for SECONDS,
# attend for half, merge and score for a quarter, reduce (one parameter) for 5 s. Each step's limit
# leaves room for the worker start, compiles and two finalists (a topk run took 50-70 s).
tune_santa() {
  local launch budget
  for launch in topk attend merge score reduce; do
    case $launch in topk) budget=$2 ;; attend) budget=$(($2 / 2)) ;; reduce) budget=5 ;; *) budget=$(($2 / 4)) ;; esac
    STEP_TIMEOUT=$((budget + 60)) step tune_santa_$launch kprof tune --method santa --workload "$1" \
      --finalists 2 --launch $launch --budget-s $budget
  done
}
# tune_fathom SCAN GATHER SCAN32 (budgets in seconds; 0 skips): kprof tune of the Fathom scan and
# gather and of scan32's scan at 1M tokens, on a captured file (every tune worker would otherwise
# synthesise the 1M-token spec on the CPU first); one finalist each; a cache keyed to other code
# is kept as *.stale.json. Each step's limit leaves ~35 s for the worker start and the finalist.
F1M=/tmp/kprof_f1m.safetensors
TUNE_1M="--workload $F1M --rounds 2 --observations 20 --finalists 1 --replace-stale"
# ensure_w32: the 32K Qwen workload captured once per machine (W32), its SANTA++ teams prepared
W32=/tmp/kprof_qwen32k.safetensors
ensure_w32() {
  [ -f $W32 ] || kprof capture --synthetic $W "--out" $W32 > "$out/capture.log" 2>&1 || status=1
  step santa_prepare kprof santa prepare --workload $W32
}
# santa_issue_compare [METHOD...]: the SANTA++ issue's comparison (full default protocol) of
# santa, the given variants and cuDNN against Flash
santa_issue_compare() {
  local extra=() m
  for m in "$@"; do extra+=(--method "$m"); done
  STEP_TIMEOUT=200 step santa_compare kprof compare --method santa "${extra[@]}" --method cudnn \
    --baseline flash --workload $W32 --config default --out "$out/santa_compare.json"
}
# ensure_f1m: the 1M-token workload captured once per machine (synthesised on the GPU, ~70 s)
ensure_f1m() {
  [ -f $F1M ] || STEP_TIMEOUT=150 step capture_f1m kprof capture --synthetic qwen3-8b-1m --out $F1M
}
tune_fathom() {
  local F=$TUNE_1M
  ensure_f1m
  [ "$1" -gt 0 ] && STEP_TIMEOUT=$(($1 + 35)) step tune_fathom_scan kprof tune --method fathom $F --launch scan --budget-s $1
  [ "$2" -gt 0 ] && STEP_TIMEOUT=$(($2 + 35)) step tune_fathom_gather kprof tune --method fathom $F --launch gather --budget-s $2
  [ "$3" -gt 0 ] && STEP_TIMEOUT=$(($3 + 35)) step tune_scan32_scan kprof tune --method scan32 $F --launch scan --budget-s $3
  return 0
}
# tune_selection SECONDS: kprof tune of the top-k and the row fetch of Fathom and of scan32 (the
# baseline gets the same tuning as the method), SECONDS each
tune_selection() {
  local F=$TUNE_1M m launch
  ensure_f1m
  for m in fathom scan32; do
    for launch in topk fetch; do
      STEP_TIMEOUT=$(($1 + 40)) step tune_${m}_$launch kprof tune --method $m $F --launch $launch --budget-s $1
    done
  done
}
step install "$py" -m pip install -q --no-deps --no-build-isolation -e .
step env kprof env
kprof env --json > "$out/env.json" 2>&1 || status=1
if [ "$mode" = acceptance ]; then
  # one call's worth of acceptance runs, most important first: SANTA++ at its defaults beside
  # cuDNN against Flash (full protocol); Fathom and the scan baselines at default configs; kprof
  # tune for the five SANTA++ launches (the caller copies profiles/tuned), then SANTA++ at the
  # tuned configs; fp32 validation and stages. Fathom tuning is its own mode (fathom-tune).
  W32=/tmp/kprof_qwen32k.safetensors
  kprof capture --synthetic $W "--out" $W32 > "$out/capture.log" 2>&1 || status=1
  step santa_prepare kprof santa prepare --workload $W32
  STEP_TIMEOUT=150 step santa_compare kprof compare --method santa --method cudnn --baseline flash \
    --workload $W32 --config default --out "$out/santa_compare.json"
  STEP_TIMEOUT=150 step fathom_compare kprof compare --method fathom --method sparq16 --baseline scan32 \
    --workload qwen3-8b-1m --rounds 2 --warmup-pairs 5 --observations 30 --config default --out "$out/fathom_compare.json"
  tune_santa $W32 20
  STEP_TIMEOUT=60 step santa_compare_tuned kprof compare --method santa --method cudnn --baseline flash \
    --workload $W32 --rounds 5 --out "$out/santa_compare_tuned.json"
  STEP_TIMEOUT=40 step santa_validate_fp32 kprof validate --method santa:out=fp32 --workload $W32 --realisations 3
  STEP_TIMEOUT=40 step santa_stages kprof stages --method santa --workload $W32 --rounds 3 --config default \
    --out "$out/santa_stages.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = screen ]; then
  W32=/tmp/kprof_qwen32k.safetensors
  kprof capture --synthetic $W "--out" $W32 > "$out/capture.log" 2>&1 || status=1
  STEP_TIMEOUT=90 step gather_sweep "$py" scripts/bench_gather.py --sweep
  step santa_prepare kprof santa prepare --workload $W32
  variants=(santa santa:topk.num_warps=4 santa:topk.num_warps=16 santa:topk.BLOCK_T=4096,topk.num_warps=8
    santa:topk.BLOCK_T=4096,topk.num_warps=16 santa:topk.BLOCK_T=8192,topk.num_warps=16
    santa:topk.BLOCK_T=1024,topk.num_warps=2 santa:topk.BLOCK_T=1024,topk.num_warps=4
    santa:topk.BLOCK_T=1024,topk.num_warps=8 santa:topk.BLOCK_T=512,topk.num_warps=1
    santa:topk.BLOCK_T=512,topk.num_warps=2 santa:topk.BLOCK_T=512,topk.num_warps=4
    santa:topk.BLOCK_T=256,topk.num_warps=1 santa:topk.BLOCK_T=256,topk.num_warps=2
    santa:merge.num_warps=2 santa:merge.num_warps=4 santa:merge.num_warps=16
    santa:attend.BLOCK_R=16 santa:attend.BLOCK_R=64 santa:attend.NUM_SPLITS=32 santa:attend.NUM_SPLITS=128
    santa:attend.num_warps=2 santa:attend.num_warps=8 santa:attend.num_stages=2
    santa:score.BLOCK_M=32 santa:score.BLOCK_M=128 santa:score.num_warps=2 santa:score.num_warps=8)
  STEP_TIMEOUT=200 step santa_sweep "$py" scripts/sweep_stages.py --workload $W32 --rounds 3 --obs 40 "${variants[@]}"
  ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  STEP_TIMEOUT=150 step ncu_santa_full "$ncu_bin" --set full --import-source yes --cache-control all \
    --clock-control none -k "regex:santa_(score|block_topk|merge_union|attend)" -c 4 -f -o "$out/santa_full" \
    "$py" scripts/sweep_stages.py --workload $W32 --rounds 1 --obs 1 santa
  [ -f "$out/santa_full.ncu-rep" ] && "$ncu_bin" --import "$out/santa_full.ncu-rep" --page details > "$out/santa_full_details.txt" 2>&1
  STEP_TIMEOUT=120 step fathom_stages_scan32 kprof stages --method scan32 --workload qwen3-8b-1m --rounds 3 \
    --stage-observations 20 --warmup-pairs 5
  STEP_TIMEOUT=120 step fathom_stages kprof stages --method fathom --workload qwen3-8b-1m --rounds 3 \
    --stage-observations 20 --warmup-pairs 5
  STEP_TIMEOUT=150 step fathom_compare kprof compare --method fathom --method sparq16 --method fathom:index=hbm \
    --method scan32:index=hbm --baseline scan32 --workload qwen3-8b-1m --rounds 3 --warmup-pairs 10 \
    --observations 50 --out "$out/fathom_compare.json"
  STEP_TIMEOUT=60 step santa_validate_k_eq_m kprof validate --method santa:k=1000000 --workload $W32 --realisations 1
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = tune ]; then
  # kprof tune on the H200 for the SANTA++ launches (profiles copied to OUTDIR/tuned) after a short
  # SANTA++ selection screen and the gather benchmark
  W32=/tmp/kprof_qwen32k.safetensors
  kprof capture --synthetic $W "--out" $W32 > "$out/capture.log" 2>&1 || status=1
  STEP_TIMEOUT=40 step gather_bench "$py" scripts/bench_gather.py
  step santa_prepare kprof santa prepare --workload $W32
  STEP_TIMEOUT=90 step santa_sweep "$py" scripts/sweep_stages.py --workload $W32 --rounds 3 --obs 40 santa \
    santa:topk.num_warps=16 santa:topk.SELECT=3 santa:topk.SELECT=3,topk.num_warps=16 \
    santa:topk.SELECT=3,topk.num_warps=4 santa:topk.SELECT=3,topk.BLOCK_T=4096,topk.num_warps=16 \
    santa:topk.SELECT=3,topk.BLOCK_T=1024,topk.num_warps=8
  tune_santa $W32 55
  mkdir -p "$out/tuned" && cp profiles/tuned/*.json "$out/tuned/" 2>/dev/null
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-screen ]; then
  # the Fathom kernel tests on the GPU (validation alone cannot see a wrong scan: the reference
  # attends over the kernel's own winners); scan tiles, top-k pruning, fetch and gather tiles at
  # 1M tokens (stage medians per variant in one session); the gather benchmark
  STEP_TIMEOUT=150 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom
  variants=(scan32 scan32:scan.BLOCKS=16,scan.num_warps=1 scan32:scan.BLOCKS=64,scan.num_warps=4
    fathom fathom:scan.BLOCKS=16,scan.num_warps=1 fathom:scan.BLOCKS=64,scan.num_warps=4 fathom:topk.PRUNE=0
    fathom:fetch.ROWS=64,fetch.num_warps=8 fathom:fetch.ROWS=8,fetch.num_warps=2 fathom:fetch.ROWS=32,fetch.num_warps=4
    fathom:attend.BLOCK_R=32 fathom:attend.num_warps=8)
  STEP_TIMEOUT=150 step fathom_sweep "$py" scripts/sweep_stages.py --workload qwen3-8b-1m --rounds 2 --obs 10 \
    "${variants[@]}"
  STEP_TIMEOUT=40 step gather_bench "$py" scripts/bench_gather.py
  [ "${3:-}" = tune ] || { echo "gpu_check: overall status $status (logs in $out)"; exit $status; }
fi
if [ "$mode" = fathom-probe ]; then
  # the last call of session 6: the issue's comparison at the defaults (every scan enqueued before
  # any selection), the same in CUDA-graph replays (GPU time without the host's launch cost) with
  # 4 and 8 pieces, and the HBM-index pair (unpipelined by default)
  ensure_f1m
  STEP_TIMEOUT=60 step fathom_compare kprof compare --method fathom --baseline scan32 --workload $F1M --rounds 3 \
    --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare.json"
  STEP_TIMEOUT=80 step fathom_compare_graph kprof compare --method fathom --method fathom:pieces=8 \
    --method scan32:pieces=8 --baseline scan32 --workload $F1M --graph --rounds 2 --warmup-pairs 5 --observations 10 \
    --config default --out "$out/fathom_compare_graph.json"
  STEP_TIMEOUT=50 step fathom_compare_hbm kprof compare --method fathom:index=hbm --baseline scan32:index=hbm \
    --workload $F1M --rounds 2 --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_hbm.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = chain-screen ]; then
  # launch-chain variants: the SANTA++ kernel tests on the GPU (PDL against the plain chain, merge
  # by score word), then one shared-rounds comparison against Flash of SANTA++ with and without
  # programmatic dependent launch, merge SELECT=3 and a wider reducer, beside cuDNN; then the
  # Fathom issue comparison eagerly at 4 and 8 pieces (launches bound once to their arguments)
  STEP_TIMEOUT=150 step pytest_santa "$py" -m pytest -q -p no:cacheprovider tests/kernels/santa \
    tests/kernels/test_dependent_launch.py
  ensure_w32
  STEP_TIMEOUT=200 step santa_compare kprof compare --method santa --method santa:pdl=0 \
    --method santa:merge.SELECT=3 --method santa:reduce.num_warps=8 --method cudnn --baseline flash \
    --workload $W32 --config default --rounds 8 --out "$out/santa_compare.json"
  ensure_f1m
  STEP_TIMEOUT=80 step fathom_compare kprof compare --method fathom --method fathom:pieces=8 --baseline scan32 \
    --workload $F1M --rounds 3 --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = chain-profile ]; then
  # where the SANTA++ chain's time goes with and without PDL (kprof stages --chain: prefix
  # medians, differences = marginal cost of each launch in the running chain); launch variants
  # re-screened under PDL in one shared-rounds comparison; the Fathom GPU tests not yet run on a
  # GPU (the pipelined step in graph replays and under another stream, host-memory kinds)
  ensure_w32
  for m in santa santa:pdl=0; do
    STEP_TIMEOUT=90 step "chain_${m//[:=]/_}" kprof stages --chain --method $m --workload $W32 --rounds 5 \
      --stage-observations 200 --config default --out "$out/chain_${m//[:=]/_}.json"
  done
  STEP_TIMEOUT=200 step santa_variants kprof compare --method santa --method santa:topk.BLOCK_T=4096 \
    --method santa:attend.NUM_SPLITS=32 --method santa:attend.NUM_SPLITS=128,attend.BLOCK_R=16 \
    --method santa:score.BLOCK_M=128 --method santa:merge.num_warps=4 --method santa:topk.num_warps=8 \
    --baseline flash --workload $W32 --config default --rounds 5 --out "$out/santa_variants.json"
  STEP_TIMEOUT=200 step pytest_fathom_gpu "$py" -m pytest -q -p no:cacheprovider -m gpu \
    tests/kernels/fathom/test_decode.py tests/test_host_memory.py
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = chain-attend ]; then
  # attend's row-to-entry search (SEARCH=1: binary search of the tile's first entry, then a
  # BLOCK_R window) on the GPU: the SANTA++ tests, validation (fp32 accumulation, fp16, K = M),
  # launch variants under PDL against Flash beside cuDNN, and the chain's marginal costs
  STEP_TIMEOUT=150 step pytest_santa "$py" -m pytest -q -p no:cacheprovider tests/kernels/santa
  ensure_w32
  STEP_TIMEOUT=60 step santa_validate_fp32 kprof validate --method santa:out=fp32 --workload $W32 --realisations 3
  STEP_TIMEOUT=60 step santa_validate kprof validate --method santa --workload $W32 --realisations 3
  STEP_TIMEOUT=60 step santa_validate_k_eq_m kprof validate --method santa:k=1000000 --workload $W32 --realisations 1
  STEP_TIMEOUT=200 step santa_variants kprof compare --method santa --method santa:attend.SEARCH=0 \
    --method santa:attend.NUM_SPLITS=128,attend.BLOCK_R=16 --method santa:attend.NUM_SPLITS=32 \
    --method santa:attend.num_warps=2 --method santa:topk.BLOCK_T=1024,topk.num_warps=8 --method cudnn \
    --baseline flash --workload $W32 --config default --rounds 5 --out "$out/santa_variants.json"
  STEP_TIMEOUT=90 step chain_santa kprof stages --chain --method santa --workload $W32 --rounds 5 \
    --stage-observations 200 --config default --out "$out/chain_santa.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = santa-final ]; then
  # the SANTA++ issue's measurements of the final kernels: tests on the GPU, fp32 validation, a
  # short screen of merge variants, then the full default protocol (compare beside cuDNN against
  # Flash, isolated stages) and the chain's marginal costs
  STEP_TIMEOUT=150 step pytest_santa "$py" -m pytest -q -p no:cacheprovider tests/kernels/santa \
    tests/kernels/test_dependent_launch.py
  ensure_w32
  STEP_TIMEOUT=60 step santa_validate_fp32 kprof validate --method santa:out=fp32 --workload $W32 --realisations 3
  STEP_TIMEOUT=120 step santa_variants kprof compare --method santa --method santa:merge.GATHER=1 \
    --method santa:merge.num_warps=16 --method santa:merge.num_warps=4 --baseline flash \
    --workload $W32 --config default --rounds 5 --out "$out/santa_variants.json"
  santa_issue_compare santa:merge.GATHER=1
  STEP_TIMEOUT=120 step santa_stages kprof stages --method santa --workload $W32 --config default \
    --out "$out/santa_stages.json"
  STEP_TIMEOUT=90 step chain_santa kprof stages --chain --method santa --workload $W32 --config default \
    --out "$out/chain_santa.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = gated-final ]; then
  # timed regions behind the host gate (kprof/host_gate.py): its GPU tests and the harness tests,
  # then the SANTA++ issue comparison (full default protocol) and the Fathom issue comparison
  STEP_TIMEOUT=120 step pytest_gate "$py" -m pytest -q -p no:cacheprovider tests/test_host_gate.py \
    tests/test_gpu_harness.py tests/test_runner.py
  ensure_w32
  santa_issue_compare santa:merge.GATHER=1
  ensure_f1m
  STEP_TIMEOUT=80 step fathom_compare kprof compare --method fathom --baseline scan32 --workload $F1M --rounds 3 \
    --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = gate-check ]; then
  # the time-bounded host gate: its GPU tests, the harness tests, a short SANTA++ run behind it
  STEP_TIMEOUT=90 step pytest_gate "$py" -m pytest -q -p no:cacheprovider tests/test_host_gate.py \
    tests/test_gpu_harness.py tests/test_runner.py
  ensure_w32
  STEP_TIMEOUT=90 step santa_compare kprof compare --method santa --method santa:merge.GATHER=1 --method cudnn \
    --baseline flash --workload $W32 --config default --rounds 5 --out "$out/santa_compare.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = session-check ]; then
  # the gate first (every later number stands on it), then the SANTA++ issue comparison at the
  # defaults, eager (full protocol) and in graph replays, a screen of launch configs the earlier
  # screens left out, the chain's marginal costs, and Fathom against scan32 eager and in replays
  STEP_TIMEOUT=90 step pytest_gate "$py" -m pytest -q -p no:cacheprovider tests/test_host_gate.py \
    tests/test_gpu_harness.py tests/test_runner.py
  ensure_w32
  santa_issue_compare
  STEP_TIMEOUT=90 step santa_compare_graph kprof compare --method santa --method cudnn --baseline flash \
    --workload $W32 --graph --rounds 10 --config default --out "$out/santa_compare_graph.json"
  STEP_TIMEOUT=120 step santa_variants kprof compare --method santa --method santa:score.BLOCK_M=32 \
    --method santa:score.BLOCK_M=32,score.num_warps=2 --method santa:topk.BLOCK_T=1024 \
    --method santa:attend.num_warps=8 --method santa:attend.BLOCK_R=16 --baseline flash \
    --workload $W32 --config default --rounds 5 --out "$out/santa_variants.json"
  STEP_TIMEOUT=90 step chain_santa kprof stages --chain --method santa --workload $W32 --config default \
    --out "$out/chain_santa.json"
  ensure_f1m
  STEP_TIMEOUT=80 step fathom_compare kprof compare --method fathom --method sparq16 --baseline scan32 \
    --workload $F1M --rounds 3 --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare.json"
  STEP_TIMEOUT=80 step fathom_compare_graph kprof compare --method fathom --baseline scan32 --workload $F1M \
    --graph --rounds 3 --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare_graph.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = santa-screen ]; then
  # the GPU tests of SANTA++ (attend.SEARCH=2 is the default now), the host gate and the harness,
  # then a screen of launch configs around the new attend: the previous search as a control, score
  # and reducer warps, score stages, attend splits and warps
  STEP_TIMEOUT=240 step pytest_santa "$py" -m pytest -q -p no:cacheprovider tests/kernels/santa \
    tests/kernels/test_dependent_launch.py tests/test_host_gate.py tests/test_gpu_harness.py tests/test_runner.py
  ensure_w32
  STEP_TIMEOUT=150 step santa_variants kprof compare --method santa --method santa:attend.SEARCH=1 \
    --method santa:score.num_warps=8 --method santa:score.num_stages=1 --method santa:attend.NUM_SPLITS=32 \
    --method santa:attend.num_warps=2 --method santa:reduce.num_warps=4 --baseline flash \
    --workload $W32 --config default --rounds 6 --out "$out/santa_variants.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = issue-final ]; then
  # both issues' measurements at the defaults: SANTA++ fp32 validation, the issue comparison
  # (full default protocol) eager and in graph replays, isolated stages, chain costs and ncu
  # kernel durations; Fathom against scan32 eager and in graph replays
  ensure_w32
  STEP_TIMEOUT=60 step santa_validate_fp32 kprof validate --method santa:out=fp32 --workload $W32 --realisations 3
  santa_issue_compare
  STEP_TIMEOUT=90 step santa_compare_graph kprof compare --method santa --method cudnn --baseline flash \
    --workload $W32 --graph --rounds 10 --config default --out "$out/santa_compare_graph.json"
  STEP_TIMEOUT=120 step santa_stages kprof stages --method santa --workload $W32 --config default \
    --out "$out/santa_stages.json"
  STEP_TIMEOUT=90 step chain_santa kprof stages --chain --method santa --workload $W32 --config default \
    --out "$out/chain_santa.json"
  STEP_TIMEOUT=100 step ncu_santa kprof ncu --method santa --workload $W32 --captures 3 --out "$out/ncu_santa" \
    --latency-from "$out/santa_compare.json"
  ensure_f1m
  STEP_TIMEOUT=80 step fathom_compare kprof compare --method fathom --baseline scan32 --workload $F1M --rounds 3 \
    --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare.json"
  STEP_TIMEOUT=80 step fathom_compare_graph kprof compare --method fathom --baseline scan32 --workload $F1M \
    --graph --rounds 3 --warmup-pairs 5 --observations 10 --config default --out "$out/fathom_compare_graph.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-pieces ]; then
  # the pipelined step's range count at 1M tokens: 4 (default) against 3 and 6 for Fathom and 6 for
  # scan32 (6 ranges of 1-2 KV heads: more selections to hide, a shorter scan per range)
  ensure_f1m
  STEP_TIMEOUT=200 step fathom_pieces kprof compare --method fathom --method fathom:pieces=3 --method fathom:pieces=6 \
    --method scan32:pieces=6 --baseline scan32 --workload $F1M --rounds 3 --warmup-pairs 5 --observations 10 \
    --config default --out "$out/fathom_pieces.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-tests ]; then
  # every Fathom kernel test on the GPU: each new constexpr set of the top-k compiles for ~30 s
  # there, so this needs most of a call on its own
  STEP_TIMEOUT=540 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-fused ]; then
  # the Fathom selection and decode tests on the GPU; at 1M tokens the top-k and fetch tunes of
  # Fathom and scan32, then both methods and sparq16 against scan32 at the tuned configs
  STEP_TIMEOUT=170 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom/test_selection.py \
    tests/kernels/fathom/test_decode.py -k "selection or residency"
  tune_selection 20
  STEP_TIMEOUT=70 step fathom_compare kprof compare --method fathom --method sparq16 --baseline scan32 \
    --workload $F1M --rounds 2 --warmup-pairs 5 --observations 10 --out "$out/fathom_compare.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-final ]; then
  # the issue-6 measurements of the final code at 1M tokens: the decode and scan tests on the GPU;
  # a stage screen of the defaults and two launch variants; the issue's comparison (Fathom
  # against scan32, host index), then sparq16, scan-full and the variants against scan32;
  # Fathom's stages; the HBM-index pair; the gather benchmark
  ensure_f1m
  STEP_TIMEOUT=120 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom/test_decode.py \
    tests/kernels/fathom/test_fathom_kernels.py
  STEP_TIMEOUT=100 step fathom_sweep "$py" scripts/sweep_stages.py --workload $F1M --rounds 2 --obs 10 \
    fathom fathom:plan.num_warps=1 fathom:topk.num_warps=8 scan32
  STEP_TIMEOUT=60 step fathom_compare kprof compare --method fathom --baseline scan32 --workload $F1M --rounds 3 \
    --warmup-pairs 5 --observations 10 --out "$out/fathom_compare.json"
  STEP_TIMEOUT=100 step fathom_compare_all kprof compare --method fathom --method sparq16 --method scan-full \
    --method fathom:plan.num_warps=1,topk.num_warps=8 --method scan32:plan.num_warps=1,topk.num_warps=8 \
    --baseline scan32 --workload $F1M --rounds 2 --warmup-pairs 5 --observations 10 --out "$out/fathom_compare_all.json"
  STEP_TIMEOUT=60 step stages_fathom kprof stages --method fathom --workload $F1M --rounds 2 --stage-observations 10 \
    --warmup-pairs 5 --out "$out/stages_fathom.json"
  STEP_TIMEOUT=50 step fathom_compare_hbm kprof compare --method fathom:index=hbm --baseline scan32:index=hbm \
    --workload $F1M --rounds 2 --warmup-pairs 5 --observations 10 --out "$out/fathom_hbm.json"
  STEP_TIMEOUT=40 step gather_bench "$py" scripts/bench_gather.py
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-retune ]; then
  # the three Fathom tunes afresh (after a kernel edit), then Fathom and sparq16 against scan32
  tune_fathom 20 20 20
  STEP_TIMEOUT=60 step fathom_compare_tuned kprof compare --method fathom --method sparq16 --baseline scan32 \
    --workload $F1M --rounds 2 --warmup-pairs 5 --observations 10 --out "$out/fathom_compare_tuned.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-stages ]; then
  # gather and scan32-scan tunes resumed (the cache keeps what earlier calls measured), then the
  # stage breakdown of Fathom and scan32 at 1M tokens
  tune_fathom 0 45 35
  for m in fathom scan32; do
    STEP_TIMEOUT=80 step stages_$m kprof stages --method $m --workload $F1M --rounds 2 --stage-observations 15 \
      --warmup-pairs 5 --out "$out/stages_$m.json"
  done
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = fathom-tune ] || [ "$mode" = fathom-screen ]; then
  # the Fathom tunes, then (fathom-tune) the comparisons at default and at tuned configs. The
  # caller copies profiles/tuned.
  tune_fathom 25 20 20
  [ "$mode" = fathom-screen ] && { echo "gpu_check: overall status $status (logs in $out)"; exit $status; }
  STEP_TIMEOUT=100 step fathom_compare_tuned kprof compare --method fathom --method sparq16 --method scan-full \
    --baseline scan32 --workload $F1M --rounds 2 --warmup-pairs 5 --observations 20 --out "$out/fathom_compare_tuned.json"
  STEP_TIMEOUT=100 step fathom_compare_default kprof compare --method fathom --method fathom:index=hbm \
    --method scan32:index=hbm --baseline scan32 --workload $F1M --rounds 2 --warmup-pairs 5 --observations 20 \
    --config default --out "$out/fathom_compare_default.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
if [ "$mode" = santa ]; then
  STEP_TIMEOUT=100 step pytest_santa "$py" -m pytest -q -x -p no:cacheprovider tests/kernels/santa
  bash scripts/bench_santa.sh "$out/santa" 20 20 || status=1
  ncu_tables /tmp/kprof_qwen32k.safetensors "$out/santa/santa_compare.json"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
step pytest_gpu "$py" -m pytest -m gpu -q -p no:cacheprovider tests
if [ "$mode" = fathom ]; then
  step fathom_gather "$py" scripts/bench_gather.py
  ensure_f1m
  step fathom_check kprof validate --method fathom --workload $F1M
  step fathom_compare kprof compare --method fathom --method sparq16 --method scan-full --baseline scan32 \
    --workload $F1M --rounds 5 --warmup-pairs 20 --observations 100 --out "$out/fathom_compare.json"
  step fathom_compare_hbm kprof compare --method fathom:index=hbm --baseline scan32:index=hbm \
    --workload $F1M --rounds 5 --warmup-pairs 20 --observations 100 --out "$out/fathom_hbm.json"
  step fathom_stages kprof stages --method fathom --workload $F1M --rounds 5 --stage-observations 50
fi
[ "$mode" = fathom ] && { echo "gpu_check: overall status $status (logs in $out)"; exit $status; }
if [ "$mode" = ncu ]; then
  step ncu_flash kprof ncu --method flash --workload $W --captures 3 --out "$out/ncu_flash"
  step ncu_santa kprof ncu --method santa --workload $W --captures 3 --out "$out/ncu_santa"
  step ncu_dense kprof ncu --method triton-dense --workload $W --captures 3 --out "$out/ncu_dense"
  echo "gpu_check: overall status $status (logs in $out)"; exit $status
fi
[ "$mode" = santa ] && { echo "gpu_check: overall status $status (logs in $out)"; exit $status; }
step check_dense kprof check --method triton-dense --workload $W
if [ "$mode" != quick ]; then
  step compare_main kprof compare --method cudnn --method triton-dense --baseline flash --workload $W --out "$out/compare_main.json"
  step compare_aa kprof compare --method flash --baseline flash --workload $W --out "$out/compare_aa.json"
  step compare_aa_graph kprof compare --method flash --baseline flash --workload $W --graph --out "$out/compare_aa_graph.json"
  step compare_aaa kprof compare --method flash --method flash --baseline flash --workload $W --out "$out/compare_aaa.json"
  step stages_dense kprof stages --method triton-dense --workload $W --out "$out/stages_dense.json"
  step compare_graph kprof compare --method triton-dense --baseline flash --workload $W --graph --rounds 10 --out "$out/compare_graph.json"
  step compare_host kprof compare --method triton-dense --baseline flash --workload $W --host-bound --rounds 10 --out "$out/compare_host.json"
fi
[ "$mode" = quick ] || step probe_order "$py" scripts/probe_order_effect.py --workload $W
step bench_dense "$py" scripts/bench_dense.py --workload $W --calls 1000
echo "gpu_check: overall status $status (logs in $out)"
exit $status
