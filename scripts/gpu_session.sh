#!/usr/bin/env bash
# One call on the GPU node: gpu tests, runtime checks, benchmarks; logs and JSON under $OUT.
#   bash scripts/gpu_session.sh [all | comma list of: tests,launch,bench,matmul,farm,gate,throughput,flat,
#                                       autotune,tunematmul,tuneexh,attnwide,mmab,attn15,occ,provenance,ncu128,diag,
#                                       diaghit,farmtests,badinputs,farmsplit,startup,ncu,asm,host,corpus,lang,ab,
#                                       dottests,fleet,scale,tutorials,farmcorpus,farmresume,abin,pick,extsuite,pending,sustain,
#                                       gputests,ncucorpus,swap,quick,laggards] [pytest args]
# Runs from the repository root with the node's python3 (torch, triton, llvmlite, cuda-bindings there); ray and
# pydantic come from .gpu-node/site.tar.xz when it was carried (bash ../shared/gpu-node/bundle.sh builds it; build it
# with `EXTRA=sqlalchemy bash ../shared/gpu-node/bundle.sh`: the node lacks sqlalchemy, which the farm's results store
# imports, and without it pytest stops at collecting the farm's test files, running no gpu test: 2026-12-08).
set -u
FINAL=${OUT:-/tmp/out}; mkdir -p "$FINAL"
OUT=/tmp/gpu-session; rm -rf "$OUT"; mkdir -p "$OUT"   # everything lands here; $FINAL gets a tarball + tables
what=${1:-all}; shift || true
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 TILEFARM_CACHE_DIR=/tmp/tf-cache
if [ -f .gpu-node/site.tar.xz ] && [ ! -d /tmp/site/ray ]; then
  mkdir -p /tmp/site && tar -xJf .gpu-node/site.tar.xz -C /tmp/site
fi
[ -d /tmp/site ] && export PYTHONPATH=$PYTHONPATH:/tmp/site
python3 -c "import sqlalchemy" 2>/dev/null || echo "WARNING: no sqlalchemy here (rebuild site.tar.xz with EXTRA=sqlalchemy): the farm's tests cannot be collected"
# The ptxas users get: the nvidia-cuda-nvcc pip package (a dependency; the node lacks it and has CUDA 13.0's).
# A call carries at most 64 MiB with the tree: since 2026-12-07 the tracked tree (~25 MB) and site.tar.xz (~32 MB)
# leave no room for this tarball (~12 MB), so calls carry site.tar.xz alone and use the node's ptxas (both sides of
# an A/B the same assembler); carry it where the tree allows:
#   tar -C .venv/lib/python3.11/site-packages/nvidia/cu13 -cf - bin/ptxas | xz -6 > .gpu-node/ptxas.tar.xz
if [ -f .gpu-node/ptxas.tar.xz ]; then
  [ -x /tmp/nvcc/bin/ptxas ] || { mkdir -p /tmp/nvcc && tar -xJf .gpu-node/ptxas.tar.xz -C /tmp/nvcc; }
  export TILEFARM_PTXAS=/tmp/nvcc/bin/ptxas
fi
status=()
step() {  # step NAME CMD...: run, tee the log, remember the exit code
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  set -o pipefail; "$@" 2>&1 | tee "$OUT/$name.log" | tail -n 25; local rc=$?; set +o pipefail
  status+=("$name rc=$rc $((SECONDS - t0))s")
  deliver
}
# The device tool returns at most 8 files from $FINAL: everything goes into $OUT, and after every step $FINAL gets
# $OUT whole as one archive, the status so far and the tables written so far in one file, so a call cut short by its
# time limit still returns what finished.
deliver() {
  printf '%s\n' "${status[@]}" > "$FINAL/status.txt"
  tar -czf "$FINAL/session.tgz.tmp" -C "$OUT" . && mv "$FINAL/session.tgz.tmp" "$FINAL/session.tgz"
  cat "$OUT"/*.md > "$FINAL/tables.md" 2>/dev/null || true
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, llvmlite; print('torch', torch.__version__, 'triton', triton.__version__, 'llvmlite', llvmlite.__version__)" | tee -a "$OUT/gpu.txt"
has() { [ "$what" = all ] || [[ ",$what," == *",$1,"* ]]; }   # what: all, or a comma list of parts
ST=.tilefarm/farm.db                                              # where the bundled configs store results
if has tests; then
  step gpu-tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=600 tests "$@"
  step runtime-check python3 scripts/gpu_runtime_check.py --json "$OUT/runtime-check.json"
  step bench-launch python3 scripts/bench_launch.py --out "$OUT"
fi
if [[ ",$what," == *",quicktests,"* ]]; then  # named only: the gpu tests in a short device budget, in an order
  # that puts the code generator's newest paths first; tests/ops (1,065 tests) last, stopped by SIGINT after
  # OPS_S seconds so pytest still prints what ran
  step ux-loopback python3 -m pytest -q -p no:cacheprovider tests/farm/test_ux.py -k loopback
  step gpu-tests-core python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=300 tests/dot tests/tutorials \
    tests/runtime tests/port tests/farm "$@"
  step gpu-tests-ops timeout -s INT "${OPS_S:-60}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/ops "$@"
fi
if [[ ",$what," == *",pick,"* ]]; then  # named only: the gpu tests of PICK (test files or node ids, space-separated)
  step pick-tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=300 ${PICK:-tests/dot} "$@"
fi
if [[ ",$what," == *",host,"* ]]; then  # named only (not part of all): CPU work, ~3 min on the node
  # host-side cost against Triton (CPU only: import, fresh-process and warm compile, ptxas -v resources)
  step bench-host python3 scripts/bench_host.py --reps 9 --out "$OUT/host"
fi
if has lang; then
  # the language surface of issue 20 (libdevice, fp8, Philox, block pointers, join/split/flip, pointer arrays,
  # debug_barrier, float64 parameters): gpu-marked tests only, each against float64/bit-exact references
  step lang-tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=600 tests/ops/test_libdevice.py \
    tests/ops/test_fp8.py tests/ops/test_random.py tests/ops/test_block_ptr.py tests/ops/test_shape_ops.py "$@"
fi
if has tutorials; then
  # issue 20: TMA (host TensorDescriptor), fp8 wgmma, fp8 constants, tutorials 01-09 on the GPU (gpu-marked tests
  # against float64 references), then matmul / attention / persistent matmul / layernorm beside Triton
  step tutorial-tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=900 tests/tutorials \
    tests/ops/test_tma.py tests/ops/test_fp8.py "$@"
  step bench-tutorials python3 scripts/bench_tutorials.py --rounds "${ROUNDS:-5}" ${TUTS:+--select "$TUTS"} \
    --out "$OUT"
fi
if has bench; then
  # MEMORY_ONLY: a comma list of target ids (substrings) to run (bench_memory --only)
  step bench-memory python3 scripts/bench_memory.py --out "$OUT" ${MEMORY_ONLY:+--only "$MEMORY_ONLY"}
fi
if has farm; then
  # the farm on Ray with real timing, and its timings against the benchmark script's (same session)
  step farm-agree python3 -m farm run configs/h200-agree.yaml --label main --format markdown
  python3 -m farm report latest -s $ST --format json > "$OUT/farm-agree.json" 2>"$OUT/farm-agree.err"
  [ -f "$OUT/memory-$(date +%F).json" ] && step farm-vs-bench python3 scripts/compare_farm_bench.py \
    "$OUT/farm-agree.json" "$OUT/memory-$(date +%F).json" --out "$OUT"
fi
if has gate; then
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$PWD" ]; then   # a repository of this tree's own
    git init -q && git add -A && git -c user.name=node -c user.email=node@localhost commit -qm snapshot
  fi
  # identical runs must pass the gate (false alarms counted over repeats); a deliberately slowed kernel must fail
  step farm-gate-main python3 -m farm run configs/h200-gate.yaml --local --label gate-main --force --format none
  for i in 1 2 3; do
    step farm-gate-rep$i python3 -m farm run configs/h200-gate.yaml --local --label gate-rep$i --force --format none
    step farm-gate$i python3 -m farm gate gate-rep$i --baseline gate-main -s $ST --config configs/gates.yaml \
      --markdown "$OUT/gate$i.md" --junit "$OUT/gate$i.xml"
  done
  # slow vector_add down on purpose (blocks of 64 instead of 1024) in a commit of its own, so the gate's A/B
  # re-measurement rebuilds that side from git (the baseline side runs from this checkout, a git repository of its
  # own: the runs record its commit)
  sed -i 's/consts.setdefault("BLOCK", 1024)/consts.setdefault("BLOCK", 1024); consts["BLOCK"] = min(consts["BLOCK"], 64)/' \
    workloads/vector_add/workload.py
  git -c user.name=node -c user.email=node@localhost commit -qam "slow vector_add"
  step farm-gate-slowrun python3 -m farm run configs/h200-gate.yaml --local --label gate-slow --force --format none
  git checkout -q HEAD~1
  step farm-gate-slow python3 -m farm gate gate-slow --baseline gate-main -s $ST --config configs/gates.yaml \
    --markdown "$OUT/gate-slow.md" --junit "$OUT/gate-slow.xml"
fi
if has throughput && [ "$(nvidia-smi -L | wc -l)" -gt 1 ]; then   # throughput against the number of GPUs
  step farm-1gpu env CUDA_VISIBLE_DEVICES=0 python3 -m farm run configs/throughput.yaml --force --format none
  python3 -m farm report latest -s $ST --format json > "$OUT/throughput-1gpu.json" 2>/dev/null
  step farm-allgpu python3 -m farm run configs/throughput.yaml --force --format none
  python3 -m farm report latest -s $ST --format json > "$OUT/throughput-allgpu.json" 2>/dev/null
  step farm-phases python3 scripts/farm_phases.py "$OUT/throughput-1gpu.json" "$OUT/throughput-allgpu.json"
fi
if has startup; then  # what a farm run's start-up is made of (Ray, CPU tasks, GPU actors), all CPUs and 8
  step farm-startup python3 scripts/farm_startup.py --json "$OUT/farm-startup.json"
  step farm-startup-8cpu python3 scripts/farm_startup.py --num-cpus 8 --json "$OUT/farm-startup-8cpu.json"
fi
if has ncu; then  # Nsight Compute on one launch, ours and Triton's: attention, matmul 2048^3 (scheduler, warp stalls)
  NCU="ncu --clock-control none --launch-skip 1 --launch-count 1 --section SchedulerStats \
       --section WarpStateStats --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis \
       --section SpeedOfLight --section MemoryWorkloadAnalysis \
       --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
  for cfg in "64 4" "128 8"; do
    set -- $cfg
    for impl in ours triton; do
      step ncu-attn-D$1-$impl $NCU -k regex:attention_fwd python3 scripts/ncu_once.py attention --impl $impl \
        --D $1 --warps $2
    done
  done
  for impl in ours triton; do
    step ncu-matmul-2048-$impl $NCU -k regex:matmul python3 scripts/ncu_once.py matmul --impl $impl --warps 8
  done
fi
if has ncu128; then  # Nsight Compute: matmul 2048^3 128x128x64 w8 s3 (ours, Triton) and
  # attention D=64 w4 (ours, Triton): where the 128x128 matmul config and attention D=64 lose to Triton
  NCU="ncu --clock-control none --launch-skip 1 --launch-count 1 --section SchedulerStats \
       --section WarpStateStats --section LaunchStats --section Occupancy --section SpeedOfLight \
       --section MemoryWorkloadAnalysis --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
  for impl in ours triton; do
    step ncu-mm128-$impl $NCU -k regex:matmul python3 scripts/ncu_once.py matmul --impl $impl --warps 8 \
      --block 128,128,64
  done
  for impl in ours triton; do
    step ncu-attn64-$impl $NCU -k regex:attention_fwd python3 scripts/ncu_once.py attention --impl $impl --D 64 \
      --warps 4
  done
fi
if [[ ",$what," == *",ncucorpus,"* ]]; then  # named only: Nsight Compute on idiom corpus cases, ours and Triton's
  # NCU_CASES (comma list), NCU_AB (comma list of TILEFARM_AB variants of ours, e.g. "tight"; "-" for none)
  NCU="ncu --clock-control none --launch-skip 1 --launch-count 1 --section SchedulerStats \
       --section WarpStateStats --section LaunchStats --section Occupancy --section SpeedOfLight \
       --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters \
       --section InstructionStats \
       --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
  for c in ${NCU_CASES//,/ }; do
    kn=$(python3 -c "import workloads.corpus as W; print(W.load('tilefarm', select=['$c'])['$c'].kernel.__name__)")
    # NCU_SRC=1: also keep each report and its per-instruction page (SASS with the stall samples of each line)
    src() { [ "${NCU_SRC:-0}" = 1 ] && echo "-f -o $OUT/ncu-$1"; }
    srcpage() {
      [ "${NCU_SRC:-0}" = 1 ] || return 0
      ncu -i "$OUT/ncu-$1.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-$1-source.csv" 2>&1
      ncu -i "$OUT/ncu-$1.ncu-rep" --page details > "$OUT/ncu-$1.log" 2>&1
    }
    step ncu-$c-triton $NCU $(src $c-triton) -k regex:$kn python3 scripts/ncu_once.py corpus --impl triton --case $c
    srcpage $c-triton
    for v in $(echo "${NCU_AB:--}" | tr , " "); do
      TILEFARM_AB=${v#-} TILEFARM_CACHE_DIR=/tmp/tf-ncu${v#-} step ncu-$c-ours${v#-} $NCU $(src $c-ours${v#-}) \
        -k regex:$kn python3 scripts/ncu_once.py corpus --impl ours --case $c
      srcpage $c-ours${v#-}
    done
  done
fi
if has flat; then
  step farm-flat python3 -m farm run configs/flat-1000.yaml --force --format none
  python3 -m farm report latest -s $ST --format json > "$OUT/farm-flat.json" 2>/dev/null
  step farm-memory python3 scripts/farm_memory.py "$OUT/farm-flat.json" "$OUT/farm-memory.json"
fi
if has launch; then
  step bench-launch python3 scripts/bench_launch.py --out "$OUT"
fi
if has matmul; then
  step bench-matmul python3 scripts/bench_matmul.py --rounds 11 --out "$OUT"
fi
if has tunematmul; then
  # the farm tunes matmul (36 candidates x 3 shapes) by halving, then exhaustively to check the picks; the
  # autotuner against Triton's on the same kernel and configs, and a fresh process reading the database
  step tune-matmul python3 -m farm tune configs/tune-matmul.yaml
  step autotune-matmul timeout 400 python3 scripts/bench_autotune.py --workload matmul --limit 24 --out "$OUT"
fi
if has tuneexh; then  # every candidate timed at max_rep_ms: what the halving's picks are checked against
  step tune-matmul-exh python3 -m farm tune configs/tune-matmul.yaml --exhaustive -s /tmp/exh.db
fi
if has provenance; then
  # registers, local bytes and blocks per SM from ptxas -v against the driver (cuFuncGetAttribute, occupancy
  # calculator); then a timed sweep whose rows carry them (needs sqlalchemy: EXTRA=sqlalchemy bundle.sh)
  step provenance-driver python3 -m pytest -q -m gpu -p no:cacheprovider tests/compiler/test_resources.py
  step provenance-run python3 -m farm run configs/quick.yaml --local --label provenance --force --format none
  step provenance-report python3 -m farm report latest -s $ST --details
fi
if has occ; then  # blocks per SM of our matmul per config
  step occupancy python3 scripts/bench_matmul.py --occupancy
fi
if has attnwide; then  # attention over a wider config space (same list for every implementation)
  mkdir -p "$OUT/attnwide"
  step attn-wide python3 scripts/bench_matmul.py --no-matmul --attn-configs wide --rounds 7 --rep-ms 50 \
    --out "$OUT/attnwide"
fi
if has mmab; then  # matmul on the configs in $MM_CONFIGS (bench_matmul --matmul-configs), ours vs Triton
  mkdir -p "$OUT/mmab"
  step mm-ab python3 scripts/bench_matmul.py --no-attention --sizes 4096,8192 --dtypes float16 \
    --matmul-configs "${MM_CONFIGS:-128x256x128-w8-s3,256x128x128-w8-s3}" --rounds 5 --out "$OUT/mmab"
fi
if has attn15; then  # attention only (wide config list), 15 interleaved rounds
  mkdir -p "$OUT/attn15"
  step attn-15 python3 scripts/bench_matmul.py --no-matmul --rounds 15 --out "$OUT/attn15"
fi
if has asm; then  # which ptxas assembles ours, and ours vs Triton when ours uses the ptxas bundled with Triton
  OPTXAS=$(python3 -c "from compiler.codegen.ptx import find_ptxas; print(find_ptxas())")
  TPTXAS=$(python3 -c "import os, triton; print(os.path.join(os.path.dirname(triton.__file__), 'backends/nvidia/bin/ptxas'))")
  echo "ours: $OPTXAS" | tee "$OUT/asm.txt"
  for p in "$OPTXAS" "$TPTXAS"; do
    echo "$p: $("$p" --version | tail -1)" | tee -a "$OUT/asm.txt"
  done
  mkdir -p "$OUT/asm-default" "$OUT/asm-triton-ptxas"
  step asm-default python3 scripts/bench_matmul.py --sizes 2048,4096 --dtypes float16 --out "$OUT/asm-default"
  step asm-triton-ptxas env TILEFARM_PTXAS="$TPTXAS" python3 scripts/bench_matmul.py --sizes 2048,4096 \
    --dtypes float16 --out "$OUT/asm-triton-ptxas"
fi
if has autotune; then
  step autotune timeout 200 python3 scripts/bench_autotune.py --workload vector_add --out "$OUT"
fi
if has diag; then
  step diag-load python3 scripts/diag_load.py --out "$OUT"
fi
if has diaghit; then
  step diag-hit python3 scripts/diag_hit.py --profile
fi
KEEP=/tmp/farm-corpus; mkdir -p "$KEEP"   # kept between calls on a warm node: the two halves of farmcorpus
compare_corpus() {  # the farm's ratios against bench_corpus.py's, once both halves exist on this node
  if [ -f "$KEEP/farm-corpus.json" ] && [ -f "$KEEP/bench-corpus.json" ]; then
    step farm-vs-bench-corpus python3 scripts/compare_corpus_farm.py "$KEEP/farm-corpus.json" \
      "$KEEP/bench-corpus.json" --out "$OUT/farm-vs-bench-corpus.md"
  fi
}
if [[ ",$what," == *",laggards,"* ]]; then  # named only: the corpus part on the kernels last measured above 1.05 of
  # Triton's time (the H200's whole-corpus run of 2026-12-06, the 49 above 1.05 then, and the twenty-second session's
  # new kernels: 55; about 4 s a kernel at ROUNDS=2); BUDGET_S stops it early, listing the rest in the JSON's not_run
  CORPUS=${CORPUS:-kmeans_assign_f32,adamw_step_f32,blocksparse_attn_f16,bmm3d_bcast_w_f16acc,bmm_broadcast_f16,bmm_f16,col_argmax_tuple_reduce_f16,desc_mm_ieee_ragged_f32,gather_w8a8_u8_optptr_swizzle,grouped_gemm_ptrs_f16,kv_append_slotmap_vllm_layout_f16,layernorm_bwd_lock_f16,libdevice_mixed_args_f32_f64,linear_decode_bias_m32_bf16,minhash_umulhi_u32,mm_bias_f16,mm_bias_relu_bf16,mm_block_ptr_f16,mm_blockptr_nested_colmajor_bf16,mm_colbias_f16,mm_decode_m16_f16,mm_desc_persistent_leaky_bf16,mm_fp16_acc,mm_fp64,mm_gelu_m32_f16,mm_gelu_tanh_f16,mm_leaky_where_f16,mm_mask_mn_f16,mm_mask_mn_f16_128x256x64_w8s3,mm_mask_mnk_f16,mm_mask_mnk_f16_128x256x64_w8s3,mm_nobias_f16,mm_relu_f16,mm_small_tile_f64,mm_tutorial_f16,moe_grouped_gemm_f16,monarch_3d_dot_f16,optional_ptrs_none_colscale_outsum_f16,pcm_frame_ptp_i16,pixel_shuffle_roundtrip_f16,ppo_clip_ratio_f16,scalar_kinds_i64_bool_one_dns_f32,scores_qkT_f32out,seq_maxpool_argmax_tile_where_f16,smoothquant_dyn_w8a8_f16,stencil5_2d_f32,topk_experts_f32,union_find_roots_while_i32,varlen_rowsum_f32,vflip_sort_gather_topk_f32,w8a16_fp8_block_gemm_bf16,fp8_block_scaled_gemm_bf16,paged_prefix_prefill_attn_f16,linear_bias_resid_ln_bf16,group_quant_fp8_colmajor_bf16,gate_up_interleaved_split_bf16}
  what="$what,corpus"
fi
if has corpus; then  # the idiom corpus (workloads/corpus): ours vs Triton from the same files, $CORPUS selects
  # SHARD=1/2 (then 2/2 in the next call): half the corpus a call, interleaved by name (143 cases at 2 rounds take
  # about 580 s, the limit of one call)
  # CORPUS_AB: A/B variants beside the default (bench_corpus --ab; a third side: use SHARD=1/3 .. 3/3 for 164 cases)
  # PREPARE_AHEAD=N (default 3): the next N kernels' float64 references in worker processes (bench_corpus
  # --prepare-ahead). H100, 2026-12-06: 33 kernels of shard 2/2 in 117 s with 3, against 24 of shard 1/2 in 350 s
  # without (72% of an earlier 164-case run's wall time was preparation); PREPARE_AHEAD=0 turns it off
  # BUDGET_S=S: start no new kernel after S seconds (the ones left are listed in the JSON's not_run)
  step bench-corpus python3 scripts/bench_corpus.py --rounds "${ROUNDS:-5}" --settle-ms "${SETTLE_MS:-100}" ${CORPUS:+--select "$CORPUS"} \
    --prepare-ahead "${PREPARE_AHEAD:-3}" ${BUDGET_S:+--budget-s "$BUDGET_S"} \
    ${SHARD:+--shard "$SHARD"} ${CORPUS_AB:+--ab "$CORPUS_AB"} --out "$OUT"
  cp "$(ls -t "$OUT"/corpus-2*.json | head -1)" "$KEEP/bench-corpus.json" 2>/dev/null && compare_corpus
fi
if [[ ",$what," == *",farmcorpus,"* ]]; then  # named only: the corpus through the farm (issue 23), ~5 min
  # configs/corpus.yaml: 66 corpus kernels at their H200 sizes, compilers [tilefarm, triton], one farm run; the
  # report shows both times, tilefarm/triton and geomeans. Run `corpus` too (before or after, same node) and the
  # farm's ratios are compared with bench_corpus.py's on the same kernels (farm-vs-bench-corpus.md).
  # CORPUS_FILES="elementwise softmax" keeps only those corpus files; the farm step stops at FARM_TIMEOUT (540 s)
  # so that what it stored still comes back. tests/farm/test_compilers.py's gpu test runs in `farmtests`.
  # first the README's one command for a Triton user's kernel file (12 jobs): its side-by-side table is kept
  rm -f "$OUT/readme-triton.db"
  step readme-triton python3 -m farm run configs/examples/scaled_add_triton.yaml --store "$OUT/readme-triton.db"
  sel=configs/corpus.yaml
  if [ -n "${CORPUS_FILES:-}" ]; then
    sel=configs/.corpus-selected.yaml
    grep -vE '^  - \{workload' configs/corpus.yaml > "$sel"
    for f in $CORPUS_FILES; do grep -E "corpus/$f\.py" configs/corpus.yaml >> "$sel"; done
  fi
  rm -f "$OUT/farm-corpus.db"
  step farm-corpus timeout "${FARM_TIMEOUT:-540}" python3 -m farm run "$sel" --allow-outside \
    --store "$OUT/farm-corpus.db" --label corpus --format none
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --ratio-to triton > "$OUT/farm-corpus.txt" 2>&1
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --ratio-to triton --format markdown \
    > "$OUT/farm-corpus.md" 2>/dev/null
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --format json > "$OUT/farm-corpus.json" \
    && cp "$OUT/farm-corpus.json" "$KEEP/farm-corpus.json" && compare_corpus
  tail -n 90 "$OUT/farm-corpus.txt"
fi
if [[ ",$what," == *",ab,"* ]]; then  # named only: an A/B in progress, TILEFARM_AB=<variant> per run ("none": off)
  # AB_VARIANTS (space-separated), AB_SELECT (bench_corpus --select); each variant its own kernel cache
  for v in ${AB_VARIANTS:-none}; do
    pt=${TILEFARM_PTXAS:-}; [[ ",$v," == *",ptxas130,"* ]] && pt=/usr/local/cuda/bin/ptxas  # the node's own
    [[ ",$v," == *",ptxas128,"* ]] && pt=$(python3 -c "import os, triton; print(os.path.join(os.path.dirname(\
      triton.__file__), 'backends/nvidia/bin/ptxas'))")  # the one bundled with Triton (its kernels get it)
    step ab-$v env TILEFARM_AB=$v TILEFARM_PTXAS=$pt TILEFARM_CACHE_DIR=/tmp/tf-ab-$v python3 scripts/bench_corpus.py \
      --rounds "${ROUNDS:-3}" ${AB_SELECT:+--select "$AB_SELECT"} --out "$OUT/ab-$v"
  done
fi
if [[ ",$what," == *",gputests,"* ]]; then  # named only: the gpu tests named by the arguments (files, -k ...)
  step gputests timeout "${GPUTESTS_S:-180}" python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=120 "$@"
fi
if [[ ",$what," == *",swap,"* ]]; then  # named only: SWAP (corpus names) with each compiler's cubin through one raw
  # launcher, each compiler's PTX through the other's ptxas, ours with Triton's entry directives (diag_swap.py)
  step diag-swap timeout "${SWAP_S:-300}" python3 scripts/diag_swap.py ${SWAP:-mm_mask_mn_f16 mm_tutorial_f16} \
    --rounds "${ROUNDS:-3}" --out "$OUT/swap"
fi
if [[ ",$what," == *",pending,"* ]]; then  # named only (~4 min): the newest code's gpu tests and the corpus kernels
  # it changes beside Triton. PENDING_PARTS picks (default: tests,changed). PENDING_CASES: corpus kernels whose code
  # changed since their last timing (default: none left after the sixteenth session's H200 run); PENDING_AB: TILEFARM_AB
  # variants to time on them; PENDING_TESTS_AB: the gpu tests under given switches; PENDING_TESTS_S: their time
  # limit (300 s: the twenty-second session's five test files of untimed switches joined the list).
  PENDING_CASES=${PENDING_CASES-}
  PENDING_AB=${PENDING_AB-}
  pp=",${PENDING_PARTS:-tests,changed},"
  # the gpu tests of the dots (every kind: the fp16-accumulator wgmma, the table-driven copy ring, the persistent
  # ring adopted on 2026-12-06), the conversions (the unaligned loads' run), fp8, dot_scaled, targets, tutorials
  [[ $pp == *,tests,* ]] && step pending-tests env TILEFARM_AB="${PENDING_TESTS_AB:-}" timeout "${PENDING_TESTS_S:-300}" python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=120 \
    tests/dot tests/ops/test_conversions.py tests/ops/test_fp8.py tests/ops/test_shape_ops.py tests/ops/test_warp_redux.py tests/ops/test_free_reshape.py tests/ops/test_sink_compares.py tests/ops/test_histogram.py tests/ops/test_bitonic_merge.py tests/ops/test_minmax_axis.py tests/ops/test_reduce_spread.py \
    tests/ops/test_cast_edges.py tests/ops/test_reduce_dtypes.py tests/ops/test_carry_layout.py tests/ops/test_linear_reshape.py tests/ops/test_tuple_carry.py tests/ops/test_promotion.py tests/ops/test_assigned_numbers.py tests/ops/test_reduce_all.py tests/ops/test_sort_keys.py tests/ops/test_partial_add.py tests/ops/test_remat_not.py tests/ops/test_pack_carried.py tests/ops/test_gap_switches.py tests/ops/test_while_carry.py tests/ops/test_store_runs.py tests/ops/test_scatter_lanes.py tests/ops/test_nreg_headroom.py tests/ops/test_gap_layouts.py tests/ops/test_gap_monarch.py tests/ops/test_tma.py tests/ops/test_desc_ring.py tests/ops/test_desc_tma.py tests/ops/test_smem_paths.py tests/dot/test_ring_ldmatrix_x4.py tests/dot/test_sync_ring.py tests/ops/test_argmin_dot_loop.py tests/dot/test_loop_scales.py tests/dot/test_sync_ring_multi.py tests/dot/test_paged_ring.py tests/dot/test_tf32x3_wgmma.py tests/passes/test_reshape_split.py tests/port/test_dot_scaled.py tests/port/test_targets.py tests/tutorials/test_tutorials.py "$@"
  # PENDING_CASES: corpus kernels whose code changed since their last timing (globs), with PENDING_AB variants
  [[ $pp == *,changed,* ]] && [ -n "${PENDING_CASES:-}" ] && step pending-changed timeout "${CHANGED_S:-540}" python3 \
    scripts/bench_corpus.py --rounds "${ROUNDS:-3}" --select "$PENDING_CASES" ${PENDING_AB:+--ab "$PENDING_AB"} \
    ${PREPARE_AHEAD:+--prepare-ahead "$PREPARE_AHEAD"} \
    --out "$OUT/pending-changed"
  cp "$OUT"/pending-changed/corpus-*.md "$OUT/pending-changed.md" 2>/dev/null || true
  # the tests of tests/ops, stopped by SIGINT after OPS_S seconds so pytest still prints what ran
  [[ $pp == *,ops,* ]] && step pending-ops timeout -s INT "${OPS_S:-150}" python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/ops/test_conversions.py tests/ops/test_ops.py "$@"
  # the project's matmul configs beside Triton and cuBLAS
  [[ $pp == *,matmul,* ]] && step pending-matmul timeout 150 python3 scripts/bench_matmul.py --no-attention --sizes 4096 \
    --rounds "${ROUNDS:-3}" --out "$OUT/pending-matmul" \
    --matmul-configs 128x256x64-w8-s3,128x256x64-w8-s4,64x128x32-w4-s4,64x256x64-w8-s3,128x128x64-w8-s3
  cp "$OUT"/pending-matmul/matmul-*.md "$OUT/" 2>/dev/null || true
  [[ $pp == *,tut,* ]] && step pending-tut timeout "${TUT_TIMEOUT:-60}" python3 scripts/bench_tutorials.py --rounds "${ROUNDS:-3}" \
    --out "$OUT/pending-tut"
  cp "$OUT"/pending-tut/tutorials-*.md "$OUT/pending-tut.md" 2>/dev/null || true
fi
if [[ ",$what," == *",sustain,"* ]]; then  # named only: SUSTAIN_SEL's kernels beside Triton, settled first, then each
  # side back to back for SUSTAIN_S seconds with nvidia-smi's board power and SM clock (is a gap a power-limit one?)
  step sustain timeout "${SUSTAIN_TIMEOUT:-240}" python3 scripts/bench_corpus.py --rounds "${ROUNDS:-3}" \
    --settle-ms "${SETTLE_MS:-150}" --sustain-s "${SUSTAIN_S:-3}" \
    --select "${SUSTAIN_SEL:-mm_relu_f16,mm_nobias_f16,mm_tutorial_f16,mm_mask_mnk_f16,mm_at_f16,attn_kT_d64}" --out "$OUT/sustain"
  cp "$OUT"/sustain/corpus-*.md "$OUT/sustain.md" 2>/dev/null || true
  cp "$OUT"/sustain/corpus-*.json "$OUT/sustain.json" 2>/dev/null || true
fi
if [[ ",$what," == *",quick,"* ]]; then  # named only: the gpu tests of QUICK_TESTS (files), before anything else
  step quick-tests timeout "${QUICK_S:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=120 \
    ${QUICK_TESTS:-tests/ops/test_desc_ring.py tests/ops/test_desc_tma.py} "$@"
fi
if [[ ",$what," == *",abin,"* ]]; then  # named only: A/Bs of TILEFARM_AB variants in one process each, one set of
  # inputs and references for all sides. ABIN_RUNS: runs separated by '@', each 'SELECT|V1;V2,...' (bench_corpus
  # --select and --ab), e.g. 'mm_*|div_quot;remat_iter8@cum*|scan_prefix'. ABIN_PART=k/n: only the runs whose index is
  # k-1 modulo n. Default: the A/Bs still in progress after the twenty-sixth session, each on the corpus kernels whose
  # code it changes (lists from scripts/corpus_ptx_sha1.py --against the default):
  # - div_quot alone and gather_idx,convert_chain,join_regs without it on the kernels the four change (together:
  #   the NF4 GEMV 0.453, the 4-bit group quantizer 1.238 by div_quot's wider stores; benchmarks/2026-12-08-h100);
  # - data_vote (twenty-sixth session): its 5 kernels (the FFT's SASS 81768 -> 3864, Triton's 3680);
  # - gather_smem (same session): its 4 kernels (the MoE block sort's row gather 73000 -> 928 SASS, Triton's 1744);
  # - headroom_step: the 4-bit quantizer under div_quot with and without it, then its 10 kernels by default;
  # - convert_cse_small (same session): its 7 kernels (RoPE + KV write 48 -> 45 registers, fewer barriers);
  # - remat_div (same session): its 7 kernels (the im2col conv1d's loop 18 -> 6 barriers; the paged fp8 KV gather
  #   64 -> 79 registers, 4 -> 3 blocks an SM: the one to watch).
  IFS='@' read -ra abruns <<< "${ABIN_RUNS:-nf4_dequant_gemv_bf16,mxfp4_gemv_e8m0_bf16,q4_group_quant_pack_u8,conv2d_nhwc_igemm_f16,mm_colbias_f16,scalar_kinds_i64_bool_one_dns_f32,complex_split_join_cat_f32,fft_radix2_rows_c64,linear_decode_bias_m32_bf16,mm_bias_relu_bf16,smoothquant_dyn_w8a8_f16|div_quot;gather_idx,convert_chain,join_regs;div_quot,gather_idx,convert_chain,join_regs@bucket_stats_spinlock_f32,complex_split_join_cat_f32,fft_radix2_rows_c64,gather_w8a8_u8_optptr_swizzle,vflip_sort_gather_topk_f32|data_vote@lut4_gather_axis1_gemm_f16,moe_block_sort_gather_rows_i8,topk_sort_gather_f32,vflip_sort_gather_topk_f32|gather_smem@q4_group_quant_pack_u8|div_quot;div_quot,headroom_step@bucketize_binary_search_i64,cosine_rows_f64,dot2_compensated_fma_f32,geglu_fwd_tanh_libdevice_bf16,groupnorm_fwd_f32,hamming_popc_u32,kldiv_logtarget_batchmean_atomic_f32,layernorm_looped_f32,spmv_csr_f32,varlen_rowsum_f32|headroom_step@attn_bwd_dq_d64,fused_moe_gemm_f16,gather_w8a8_u8_optptr_swizzle,retnet_multihead_3d_dot_state_bf16,rope_gptj_split_join_kv_write_f16,softmax_temp_allmasked_rows_f16,w8a16_int8_perchannel_hints_f16|convert_cse_small@conv2d_nchw_direct_f32,fp8_block_scaled_gemm_bf16,grouped_conv1d_im2col_dot_f16,paged_kv_gather_fp8_dequant_bf16,paged_prefix_prefill_attn_f16,w8a16_fp8_block_gemm_bf16,w8a16_int8_perchannel_hints_f16|remat_div}"
  part=${ABIN_PART:-1/1}; pk=${part%/*}; pn=${part#*/}
  for i in "${!abruns[@]}"; do
    [ $((i % pn)) -eq $((pk - 1)) ] || continue
    # ABIN_BUDGET_S: start no run after that many seconds of this script (a call's time limit, the rest skipped)
    if [ -n "${ABIN_BUDGET_S:-}" ] && [ $SECONDS -gt "$ABIN_BUDGET_S" ]; then status+=("ab-inproc-$i skipped (ABIN_BUDGET_S)"); continue; fi
    sel=${abruns[$i]%%|*}; vars=${abruns[$i]#*|}
    # ABIN_END_S: a run starts no new kernel after that many seconds of this script (bench_corpus --budget-s)
    step ab-inproc-$i python3 scripts/bench_corpus.py --rounds "${ROUNDS:-3}" --settle-ms "${SETTLE_MS:-100}" --ab "$vars" --select "$sel" \
      ${ABIN_END_S:+--budget-s $((ABIN_END_S - SECONDS))} --out "$OUT/abin$i"
    cp "$OUT"/abin$i/corpus-*.md "$OUT/abin$i.md" 2>/dev/null || true
    cp "$OUT"/abin$i/corpus-*.json "$OUT/abin$i.json" 2>/dev/null || true
  done
fi
if [[ ",$what," == *",farmresume,"* ]]; then  # named only: finish a farm corpus run stored by `farmcorpus` on an
  # earlier call: FARM_DB (default .gpu-node/farm-corpus.db, carried with its -wal/-shm files), reports as farmcorpus
  db=${FARM_DB:-.gpu-node/farm-corpus.db}
  for f in "$db" "$db-wal" "$db-shm"; do [ -f "$f" ] && cp "$f" "$OUT/"; done
  step farm-corpus-resume timeout "${FARM_TIMEOUT:-540}" python3 -m farm run --resume latest \
    --store "$OUT/farm-corpus.db" --format none
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --ratio-to triton > "$OUT/farm-corpus.txt" 2>&1
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --ratio-to triton --format markdown \
    > "$OUT/farm-corpus.md" 2>/dev/null
  python3 -m farm report corpus --store "$OUT/farm-corpus.db" --format json > "$OUT/farm-corpus.json"
  tail -n 30 "$OUT/farm-corpus.txt"
fi
if [[ ",$what," == *",dottests,"* ]]; then  # named only: the gpu tests of dot (tensor cores and FMA)
  step dot-gpu-tests python3 -m pytest -q -m gpu -p no:cacheprovider --timeout=600 tests/dot tests/corpus "$@"
fi
if has farmtests; then
  step farm-gpu-tests python3 -m pytest -q -m gpu -p no:cacheprovider tests/farm
fi
if has badinputs; then
  # the bad inputs, exit codes and machine output of issue 17 on the node (its python, its Ray, a GPU visible);
  # then the same exit codes from a real GPU run: 0 for a clean sweep, data-only JSON on stdout
  step farm-bad-inputs python3 -m pytest -q -p no:cacheprovider tests/farm/test_bad_inputs.py tests/farm/test_ux.py
  python3 -m farm run configs/quick.yaml --label exitcheck --force --format json \
    > "$OUT/farm-exit-ok.json" 2> "$OUT/farm-exit-ok.err"; status+=("farm-exit-ok rc=$? (want 0)")
  step farm-exit-json python3 -m json.tool "$OUT/farm-exit-ok.json"
fi
if has fleet; then  # issue 19: a fleet on this machine: the GPU node (no CPU slots) and two CPU-only nodes, each
  # with its own Ray folder and kernel cache; `farm run --address` joins it; the GPU node must compile nothing
  step fleet python3 scripts/fleet_session.py --cpus 4 --out "$OUT/fleet"
  cp "$OUT/fleet/fleet.json" "$OUT/fleet.json" 2>/dev/null || true
  [ "${FLEET_TESTS:-1}" = 1 ] && step fleet-tests python3 -m pytest -q -p no:cacheprovider tests/farm/test_fleet.py \
    tests/farm/test_fleet_lost_kernel.py tests/farm/test_compile_batches.py
fi
if [[ ",$what," == *",scale,"* ]]; then  # named only: the driver at 100,000 jobs (CPU only, ~6 min): stand-in
  # executor, then real local Ray (batched) at 5,000 and 100,000 jobs, and 5,000 again one actor call per job
  step driver-scale python3 scripts/bench_driver_scale.py --jobs 100000 --ray-jobs 5000,100000 \
    --gpu-jobs 5000,100000 --compare-unbatched 5000 --json "$OUT/driver-scale.json"
  cp "$OUT/driver-scale.json" "$OUT/" 2>/dev/null || true
fi
if [[ ",$what," == *",farmsplit,"* ]]; then  # named only: the farm after worker.py's split (issues 17/18) on the node
  # every farm test (not only the gpu-marked: the subprocess tests must import ray/pydantic from /tmp/site), then
  # how correlated real do_bench samples are (the gate's bootstrap blocks follow it: farm.gate.block_length)
  step farm-all-tests python3 -m pytest -q -p no:cacheprovider tests/farm tests/test_layering.py "$@"
  step farm-corr-run python3 -m farm run configs/h200-gate.yaml --local --label corr --force --format none
  step sample-correlation python3 scripts/sample_correlation.py --store $ST
fi
if [[ ",$what," == *",extsuite,"* ]]; then  # named only: Triton's language tests against our compiler (issue 20)
  # needs .gpu-node/triton-tests carried (Triton 3.6's python/test/unit/language, git-ignored, never committed);
  # ~5 min: 150 tests per file (hash-chosen, the same each run), 8 files at once, 60 s per test, 280 s per file
  if [ -d .gpu-node/triton-tests ]; then
    step extsuite python3 scripts/external_suite.py --suite .gpu-node/triton-tests --out "$OUT/extsuite" \
      --device cuda --sample "${EXT_SAMPLE:-150}" --jobs 8 --timeout 60 --file-timeout 280 ${EXT_FILES:+--files "$EXT_FILES"}
    cp "$OUT/extsuite/external-suite.md" "$OUT/extsuite.md" 2>/dev/null || true
    cp "$OUT/extsuite/external-suite.json" "$OUT/extsuite.json" 2>/dev/null || true
  else
    echo "extsuite: .gpu-node/triton-tests was not carried (run with carry: [\".gpu-node/triton-tests\"])"
  fi
fi
python3 -m farm runs -s $ST > "$OUT/farm-runs.txt" 2>&1
printf '%s\n' "${status[@]}" | tee "$OUT/status.txt"
# the device tool returns at most 8 files: one archive with everything, the status, and the tables to read at once
deliver
