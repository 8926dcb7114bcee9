#!/usr/bin/env bash
# Every GPU check in one call on a CUDA machine; all logs go to OUTDIR.
#   bash scripts/gpu_check.sh OUTDIR [MODE]       (MODE: see the table below; default full)
# Installs kprof without touching the machine's torch/triton and prints `kprof env`, then runs
# the mode. Each mode fits one 10-minute device call; a step's log is OUTDIR/<step>.log and
# result files sit beside it. Exits non-zero if any step failed (all steps still run).
# Session-specific screens of earlier sessions live in git history: each results folder's README
# names the commit and mode that produced it.
set -u
MODES="measure measure-tune full quick santa santa-screen issue-final gate-check screen tune ncu fathom fathom-screen fathom-tests fathom-tune fathom-final fathom-report fathom-pipeline santa-floor santa-final"
usage() {
  cat <<EOF
usage: scripts/gpu_check.sh OUTDIR [MODE]
  measure       the measurement issue's checks: gate GPU tests, santa A/A with two prepared copies and
                with one copy timed twice, flash A/A eager and in graph replays, santa@HEAD against
                santa, santa and triton-dense against flash, and kprof gate --against HEAD~1 on a
                commit that slows SANTA++'s topk launch
  measure-tune  santa A/A in 72 shorter rounds, eight runs of triton-dense against Flash (three
                make a gate history, five are gated against it), kprof tune of the SANTA++ launches
  full          -m gpu tests, dense baselines and the timing protocol (full-protocol comparisons,
                A/A checks, stages, graph and host-bound modes, order probe, dense benchmark)
  quick         the same without the full-protocol runs
  santa         SANTA++ kernel tests, scripts/bench_santa.sh, ncu tables beside event latency
  santa-screen  SANTA++, gate and harness GPU tests, then a shared-rounds launch-config screen
  issue-final   both issues' measurements at the defaults: SANTA++ fp32 validation, comparison
                (full protocol) eager and in graph replays, stages, chain costs, ncu durations;
                Fathom against scan32 eager and in graph replays
  gate-check    the host gate's and the harness's GPU tests, a short SANTA++ comparison behind it
  screen        SANTA++ stage sweep with full ncu sections, gather sweep, Fathom stages
  tune          kprof tune of the five SANTA++ launches (profiles copied to OUTDIR/tuned)
  ncu           ncu tables of flash, santa and triton-dense
  fathom        gather benchmark, Fathom validation, comparisons (host and HBM index), stages
  fathom-screen Fathom kernel tests on the GPU and a launch-variant stage screen at 1M tokens
  fathom-tests  every Fathom kernel test on the GPU (compile-heavy: most of a call)
  fathom-tune   kprof tune of the Fathom launches at 1M tokens, then tuned and default comparisons
  fathom-final  the Fathom kernel tests on the GPU, then the issue's comparison eager and in graph
                replays (10 rounds x 200)
  fathom-report the Fathom issue's other figures: sparq16 and scan-full, stages, the HBM index, the
                gather against cudaMemcpyAsync
  fathom-pipeline the pipelined step's GPU tests (scan work queue, waiting top-k, union in the
                top-k, graph replay), its timeline as a comparison runs it, the Fathom issue's
                comparisons eager and in graphs, and 4 against 8 pipeline ranges
  santa-final   SANTA++ fp32 validation and the issue's full-protocol comparison, at the defaults
                and for the variants in SANTA_VARIANTS (space-separated specs)
  santa-floor   the floor of any five-launch SANTA++ chain: empty and data-movement-only chains
                with SANTA++'s grids against Flash and SANTA++ (scripts/probe_chain_floor.py)
EOF
}
out=${1:-}
mode=${2:-full}
if [ -z "$out" ] || [[ " $MODES " != *" $mode "* ]]; then usage >&2; exit 2; fi
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
W=qwen2.5-7b-l14-32k
W32=/tmp/kprof_qwen32k.safetensors
F1M=/tmp/kprof_f1m.safetensors
TUNE_1M="--workload $F1M --rounds 2 --observations 20 --finalists 1 --replace-stale"

# --- shared steps ---------------------------------------------------------------------------
# ensure_w32: the 32K Qwen workload captured once per machine, its SANTA++ teams prepared
ensure_w32() {
  [ -f $W32 ] || kprof capture --synthetic $W "--out" $W32 > "$out/capture.log" 2>&1 || status=1
  step santa_prepare kprof santa prepare --workload $W32
}
# ensure_f1m: the 1M-token workload captured once per machine (synthesised on the GPU, ~80 s)
ensure_f1m() {
  [ -f $F1M ] || STEP_TIMEOUT=150 step capture_f1m kprof capture --synthetic qwen3-8b-1m --out $F1M
}
# santa_issue_compare [METHOD...]: the SANTA++ issue's comparison (full default protocol) of
# santa, the given variants and cuDNN against Flash
santa_issue_compare() {
  local extra=() m
  for m in "$@"; do extra+=(--method "$m"); done
  STEP_TIMEOUT=200 step santa_compare kprof compare --method santa "${extra[@]}" --method cudnn \
    --baseline flash --workload $W32 --config default --out "$out/santa_compare.json"
}
# fathom_issue_compare [--graph]: Fathom against scan32 at 1M tokens, defaults (10 rounds x 200
# observations: ~12 s of timing at these step times, after ~25 s of preparation)
fathom_issue_compare() {
  local name=fathom_compare${1:+_graph}
  STEP_TIMEOUT=100 step $name kprof compare --method fathom --baseline scan32 --workload $F1M "$@" --rounds 10 \
    --warmup-pairs 20 --observations 200 --config default --out "$out/$name.json"
}
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
# tune_santa SECONDS: kprof tune of the five SANTA++ launches; topk screens for SECONDS, attend for
# half, merge and score for a quarter, reduce (one parameter) for 5 s. Each step's limit leaves
# room for the worker start, compiles and two finalists (a topk run took 50-70 s).
tune_santa() {
  local launch budget
  for launch in topk attend merge score reduce; do
    case $launch in topk) budget=$1 ;; attend) budget=$(($1 / 2)) ;; reduce) budget=5 ;; *) budget=$(($1 / 4)) ;; esac
    STEP_TIMEOUT=$((budget + 60)) step tune_santa_$launch kprof tune --method santa --workload $W32 \
      --finalists 2 --launch $launch --budget-s $budget --replace-stale
  done
}
# tune_fathom SCAN GATHER SCAN32 (budgets in seconds; 0 skips): kprof tune of the Fathom scan and
# gather and of scan32's scan at 1M tokens, on the captured file (every tune worker would otherwise
# synthesise the spec on the CPU first); one finalist each; a cache keyed to other code is kept as
# *.stale.json. Each step's limit leaves ~35 s for the worker start and the finalist.
tune_fathom() {
  ensure_f1m
  [ "$1" -gt 0 ] && STEP_TIMEOUT=$(($1 + 35)) step tune_fathom_scan kprof tune --method fathom $TUNE_1M --launch scan --budget-s $1
  [ "$2" -gt 0 ] && STEP_TIMEOUT=$(($2 + 35)) step tune_fathom_gather kprof tune --method fathom $TUNE_1M --launch gather --budget-s $2
  [ "$3" -gt 0 ] && STEP_TIMEOUT=$(($3 + 35)) step tune_scan32_scan kprof tune --method scan32 $TUNE_1M --launch scan --budget-s $3
  return 0
}

# ensure_git: a checkout for NAME@REV; the device gets the working tree without .git, so a
# bundle of the repository (.carry/kprof.bundle, made by the caller) is unpacked under it
ensure_git() {
  git rev-parse HEAD > /dev/null 2>&1 && return 0
  [ -f .carry/kprof.bundle ] || { echo "no .git and no .carry/kprof.bundle: NAME@REV cannot run"; status=1; return 1; }
  git init -q . && git fetch -q .carry/kprof.bundle "+refs/heads/*:refs/heads/*" && \
    git symbolic-ref HEAD refs/heads/main && git reset -q && git log --oneline -1
}

# --- modes ----------------------------------------------------------------------------------
mode_measure() {
  ensure_git
  STEP_TIMEOUT=150 step pytest_gate "$py" -m pytest -q -p no:cacheprovider -m gpu tests/test_host_gate.py \
    tests/test_gpu_harness.py
  ensure_w32
  local c=(--workload $W32 --config default)
  STEP_TIMEOUT=200 step santa_aa kprof compare --method santa --method santa --baseline flash "${c[@]}" \
    --out "$out/santa_aa.json"
  STEP_TIMEOUT=200 step santa_aa_same kprof compare --method santa --method =santa --baseline flash "${c[@]}" \
    --out "$out/santa_aa_same.json"
  STEP_TIMEOUT=100 step flash_aa kprof compare --method flash --baseline flash "${c[@]}" --out "$out/flash_aa.json"
  STEP_TIMEOUT=100 step flash_aa_graph kprof compare --method flash --baseline flash "${c[@]}" --graph \
    --out "$out/flash_aa_graph.json"
  STEP_TIMEOUT=100 step flash_aa_graph_same kprof compare --method =flash --baseline flash "${c[@]}" --graph \
    --out "$out/flash_aa_graph_same.json"
  STEP_TIMEOUT=150 step santa_head kprof compare --method santa@HEAD --baseline santa "${c[@]}" \
    --out "$out/santa_head.json"
  STEP_TIMEOUT=200 step compare_main kprof compare --method santa --method triton-dense --baseline flash "${c[@]}" \
    --out "$out/compare_main.json"
  # a commit that slows SANTA++ (topk with 8 warps instead of 16), gated against its parent in the
  # same rounds; the device's copy is restored afterwards
  sed -i 's/Param("num_warps", (1, 2, 4, 8, 16), 16),/Param("num_warps", (1, 2, 4, 8, 16), 8),/' kernels/santa/operator.py
  git -c user.name=kprof -c user.email=kprof@localhost commit -qam "slower: topk with 8 warps" && \
    STEP_TIMEOUT=150 step gate_slow kprof gate --against HEAD~1 --method santa "${c[@]}" --out "$out/gate_slow.json"
  git reset -q --hard HEAD~1
}
mode_measure-tune() {
  ensure_w32
  local c=(--workload $W32 --config default) k
  # santa A/A in more, shorter rounds (same timed work as the default protocol)
  STEP_TIMEOUT=150 step santa_aa_short kprof compare --method santa --method santa --baseline flash "${c[@]}" \
    --rounds 72 --observations 333 --warmup-pairs 100 --out "$out/santa_aa_short.json"
  for k in 1 2 3 4 5 6 7 8; do
    STEP_TIMEOUT=80 step ci_run_$k kprof compare --method triton-dense --baseline flash "${c[@]}" \
      --out "$out/ci_run_$k.json"
  done
  tune_santa 20
}
mode_full() {
  step pytest_gpu "$py" -m pytest -m gpu -q -p no:cacheprovider tests
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
}
mode_quick() { mode_full; }
mode_santa() {
  STEP_TIMEOUT=100 step pytest_santa "$py" -m pytest -q -x -p no:cacheprovider tests/kernels/santa
  bash scripts/bench_santa.sh "$out/santa" 20 20 || status=1
  ncu_tables $W32 "$out/santa/santa_compare.json"
}
mode_santa-screen() {
  # the GPU tests of SANTA++, the host gate and the harness, then launch configs in shared rounds
  # against Flash (the variants of session 8; edit the list for the lever at hand)
  STEP_TIMEOUT=240 step pytest_santa "$py" -m pytest -q -p no:cacheprovider tests/kernels/santa \
    tests/kernels/test_dependent_launch.py tests/test_host_gate.py tests/test_gpu_harness.py tests/test_runner.py
  ensure_w32
  STEP_TIMEOUT=150 step santa_variants kprof compare --method santa --method santa:attend.SEARCH=1 \
    --method santa:score.num_warps=8 --method santa:score.num_stages=1 --method santa:attend.NUM_SPLITS=32 \
    --method santa:attend.num_warps=2 --method santa:reduce.num_warps=4 --baseline flash \
    --workload $W32 --config default --rounds 6 --out "$out/santa_variants.json"
}
mode_issue-final() {
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
  fathom_issue_compare
  fathom_issue_compare --graph
}
mode_gate-check() {
  # the time-bounded host gate: its GPU tests, the harness tests, a short SANTA++ run behind it
  STEP_TIMEOUT=90 step pytest_gate "$py" -m pytest -q -p no:cacheprovider tests/test_host_gate.py \
    tests/test_gpu_harness.py tests/test_runner.py
  STEP_TIMEOUT=60 step probe_gate "$py" scripts/probe_host_gate.py --json "$out/probe_gate.json"
  ensure_w32
  STEP_TIMEOUT=90 step santa_compare kprof compare --method santa --method cudnn --baseline flash \
    --workload $W32 --config default --rounds 5 --out "$out/santa_compare.json"
}
mode_screen() {
  ensure_w32
  STEP_TIMEOUT=90 step gather_sweep "$py" scripts/bench_gather.py --sweep
  local variants=(santa santa:topk.num_warps=8 santa:topk.BLOCK_T=4096 santa:topk.BLOCK_T=1024
    santa:merge.num_warps=4 santa:merge.num_warps=16
    santa:attend.BLOCK_R=16 santa:attend.BLOCK_R=64 santa:attend.NUM_SPLITS=32 santa:attend.NUM_SPLITS=128
    santa:attend.num_warps=2 santa:attend.num_warps=8 santa:attend.num_stages=2
    santa:score.BLOCK_M=32 santa:score.BLOCK_M=128 santa:score.num_warps=2 santa:score.num_warps=8)
  STEP_TIMEOUT=200 step santa_sweep "$py" scripts/sweep_stages.py --workload $W32 --rounds 3 --obs 40 "${variants[@]}"
  local ncu_bin
  ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  STEP_TIMEOUT=150 step ncu_santa_full "$ncu_bin" --set full --import-source yes --cache-control all \
    --clock-control none -k "regex:santa_(score|block_topk|merge_union|attend)" -c 4 -f -o "$out/santa_full" \
    "$py" scripts/sweep_stages.py --workload $W32 --rounds 1 --obs 1 santa
  [ -f "$out/santa_full.ncu-rep" ] && "$ncu_bin" --import "$out/santa_full.ncu-rep" --page details > "$out/santa_full_details.txt" 2>&1
  ensure_f1m
  for m in scan32 fathom; do
    STEP_TIMEOUT=120 step stages_$m kprof stages --method $m --workload $F1M --rounds 3 \
      --stage-observations 20 --warmup-pairs 5 --out "$out/stages_$m.json"
  done
}
mode_tune() {
  ensure_w32
  tune_santa 55
  mkdir -p "$out/tuned" && cp profiles/tuned/*.json "$out/tuned/" 2>/dev/null
}
mode_ncu() {
  step ncu_flash kprof ncu --method flash --workload $W --captures 3 --out "$out/ncu_flash"
  step ncu_santa kprof ncu --method santa --workload $W --captures 3 --out "$out/ncu_santa"
  step ncu_dense kprof ncu --method triton-dense --workload $W --captures 3 --out "$out/ncu_dense"
}
mode_fathom() {
  step fathom_gather "$py" scripts/bench_gather.py
  ensure_f1m
  step fathom_check kprof validate --method fathom --workload $F1M
  step fathom_compare kprof compare --method fathom --method sparq16 --method scan-full --baseline scan32 \
    --workload $F1M --rounds 5 --warmup-pairs 20 --observations 100 --out "$out/fathom_compare.json"
  step fathom_compare_hbm kprof compare --method fathom:index=hbm --baseline scan32:index=hbm \
    --workload $F1M --rounds 5 --warmup-pairs 20 --observations 100 --out "$out/fathom_hbm.json"
  step fathom_stages kprof stages --method fathom --workload $F1M --rounds 5 --stage-observations 50
}
mode_fathom-screen() {
  # the Fathom kernel tests on the GPU (validation alone cannot see a wrong scan: the reference
  # attends over the kernel's own winners), then scan tiles, top-k, fetch and attend variants at
  # 1M tokens (stage medians per variant in one session)
  STEP_TIMEOUT=150 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom
  ensure_f1m
  local variants=(scan32 scan32:scan.BLOCKS=16,scan.num_warps=1 scan32:scan.BLOCKS=64,scan.num_warps=4
    fathom fathom:scan.BLOCKS=16,scan.num_warps=1 fathom:scan.BLOCKS=64,scan.num_warps=4 fathom:topk.PRUNE=0
    fathom:fetch.ROWS=64,fetch.num_warps=8 fathom:fetch.ROWS=8,fetch.num_warps=2 fathom:fetch.ROWS=32,fetch.num_warps=4
    fathom:attend.BLOCK_R=32 fathom:attend.num_warps=8)
  STEP_TIMEOUT=150 step fathom_sweep "$py" scripts/sweep_stages.py --workload $F1M --rounds 2 --obs 10 "${variants[@]}"
}
mode_fathom-tests() {
  # each new constexpr set of the Fathom top-k compiles for ~30 s on the GPU machine
  STEP_TIMEOUT=540 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom
}
mode_fathom-tune() {
  # the caller copies profiles/tuned
  tune_fathom 25 20 20
  STEP_TIMEOUT=100 step fathom_compare_tuned kprof compare --method fathom --method sparq16 --method scan-full \
    --baseline scan32 --workload $F1M --rounds 2 --warmup-pairs 5 --observations 20 --out "$out/fathom_compare_tuned.json"
  STEP_TIMEOUT=100 step fathom_compare_default kprof compare --method fathom --method fathom:index=hbm \
    --method scan32:index=hbm --baseline scan32 --workload $F1M --rounds 2 --warmup-pairs 5 --observations 20 \
    --config default --out "$out/fathom_compare_default.json"
}
mode_fathom-final() {
  STEP_TIMEOUT=150 step pytest_fathom "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom/test_decode.py \
    tests/kernels/fathom/test_fathom_kernels.py
  ensure_f1m
  fathom_issue_compare
  fathom_issue_compare --graph
}
mode_fathom-report() {
  ensure_f1m
  STEP_TIMEOUT=100 step fathom_compare_all kprof compare --method fathom --method sparq16 --method scan-full \
    --baseline scan32 --workload $F1M --rounds 3 --warmup-pairs 5 --observations 20 --config default \
    --out "$out/fathom_compare_all.json"
  STEP_TIMEOUT=80 step stages_fathom kprof stages --method fathom --workload $F1M --rounds 3 --stage-observations 20 \
    --warmup-pairs 5 --config default --out "$out/stages_fathom.json"
  STEP_TIMEOUT=60 step fathom_compare_hbm kprof compare --method fathom:index=hbm --baseline scan32:index=hbm \
    --workload $F1M --rounds 5 --warmup-pairs 10 --observations 50 --config default --out "$out/fathom_hbm.json"
  STEP_TIMEOUT=60 step stages_fathom_hbm kprof stages --method fathom:index=hbm --workload $F1M --rounds 3 \
    --stage-observations 20 --warmup-pairs 5 --config default --out "$out/stages_fathom_hbm.json"
  STEP_TIMEOUT=40 step gather_bench "$py" scripts/bench_gather.py
}
mode_fathom-pipeline() {
  STEP_TIMEOUT=240 step pytest_pipeline "$py" -m pytest -q -p no:cacheprovider tests/kernels/fathom \
    -k "replays_from_a_graph or counts_tiles or waits_for_the_scan or union_built_inside"
  ensure_f1m
  fathom_issue_compare
  fathom_issue_compare --graph
  STEP_TIMEOUT=120 step fathom_compare_pieces kprof compare --method fathom --method fathom:pieces=8 \
    --method scan32:pieces=8 --baseline scan32 --workload $F1M --rounds 3 --warmup-pairs 5 --observations 10 \
    --config default --out "$out/fathom_compare_pieces.json"
}
mode_santa-final() {
  ensure_w32
  local spec sep
  for spec in santa ${SANTA_VARIANTS:-}; do
    sep=:; [[ $spec == *:* ]] && sep=,
    STEP_TIMEOUT=60 step "validate_fp32_${spec//[^a-zA-Z0-9]/_}" kprof validate --method "$spec${sep}out=fp32" \
      --workload $W32 --realisations 3
  done
  # shellcheck disable=SC2086
  santa_issue_compare ${SANTA_VARIANTS:-}
}
mode_santa-floor() {
  ensure_w32
  STEP_TIMEOUT=150 step chain_floor "$py" scripts/probe_chain_floor.py --workload $W32 --json "$out/chain_floor.json"
}

step install "$py" -m pip install -q --no-deps --no-build-isolation -e .
step env kprof env
kprof env --json > "$out/env.json" 2>&1 || status=1
"mode_$mode"
echo "gpu_check: overall status $status (logs in $out)"
exit $status
