#!/usr/bin/env bash
# On a machine with several GPUs (docs/gpu.md): every example plan the PyTorch checks use is
# built with `hspmc build --target cuda`, trained 10 steps under mpirun (one process per
# device, each on its local rank's GPU; more devices than GPUs share them), and its losses are
# compared with `hspmc train` (the CPU executor): within 1e-5 relative. Writes what it prints
# to gpu-check-multi.txt (or $1). Their communication goes through the host. Then, where the
# machine has a GPU per device, the NCCL backend: `mpirun -np N hspmc train PLAN --backend
# nccl` (kernels and communication on the GPUs) against the same CPU losses, and, on four GPUs,
# a recovery after a death on NCCL against the same recovery on the CPU.
#
# HSPMD_TARGET=cpu runs the same loop with CPU binaries (the losses then agree bit for bit):
# a dry run of this script on any machine. HSPMD_PLANS="gpt/plans/tp2 ..." checks those only;
# HSPMD_BUILD names a build directory that has hspmc (default build-gpu, configured if not).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check-multi.txt}
target=${HSPMD_TARGET:-cuda}
exec > >(tee "$out") 2>&1
start=$(date +%s)
. scripts/gpu-header.sh "gpu-check-multi (--target $target)"
build=${HSPMD_BUILD:-build-gpu}
if [ ! -x "$build/tools/hspmc/hspmc" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null || { echo "configure failed"; exit 1; }
  timeout 600 cmake --build "$build" -j "$(nproc)" --target hspmc || { echo "build failed"; exit 1; }
fi
hspmc=$build/tools/hspmc/hspmc
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
data=examples/data/gpl-3.txt
plans=${HSPMD_PLANS:-"gpt/plans/single gpt/plans/tp2 gpt/plans/dp2_tp2 gpt/plans/pipeline2 gpt/plans/pipeline2_recompute
  gpt/plans/hetero4 gpt/plans/hetero4_tied gpt/plans/cp_asym gpt/plans/hp_asym gpt/plans/hp_tp2 gpt/plans/dp2_zero
  llama/plans/tiny_llama_single llama/plans/tiny_llama_dp2_tp2 llama/plans/tiny_llama_pipeline2
  llama/plans/tiny_llama_hetero4 llama/plans/tiny_llama_cp_asym llama/plans/tiny_llama_cp_tp2 llama/plans/tiny_llama_hp_asym
  llama/plans/tiny_llama_dp2_zero llama/plans/tiny_llama_dp2_tp2_zero llama/plans/tiny_llama_hp_zero_heads
  gpt/plans/dp4_zero_replicas llama/plans/tiny_llama_pipelines_zero_replicas gpt/plans/dp3_zero_chunked"}
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
# The largest relative difference of two loss files' 10 steps; fails beyond 1e-5.
compare() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
worst = max(abs(x - y) / abs(y) for x, y in zip(a, b)) if len(a) == len(b) == 10 else float("inf")
print(f"largest difference {worst:.1e} relative over 10 steps")
sys.exit(0 if worst <= 1e-5 else 1)
PY
}
passed=0 failed=0 ncclPassed=0 ncclFailed=0 ncclSkipped=0
# nccl_check WHAT LOSSES WANT COMMAND...: runs COMMAND --losses LOSSES (NCCL training) and
# compares its losses with those of WANT.
nccl_check() {
  local what=$1 losses=$2 want=$3 ran verdict
  shift 3
  if ! ran=$(timeout 300 "$@" --losses "$losses" 2>&1); then
    echo "FAIL $what: $(printf '%s\n' "$ran" | grep -m1 'error:' || printf '%s\n' "$ran" | tail -3)"
    ncclFailed=$((ncclFailed + 1))
  elif verdict=$(compare "$losses" "$want"); then
    echo "ok   $what: $verdict"
    ncclPassed=$((ncclPassed + 1))
  else
    echo "FAIL $what: $verdict"
    ncclFailed=$((ncclFailed + 1))
  fi
}
for plan in $plans; do
  file=examples/$plan.hspmd dir=$build/generated/multi_$(basename "$plan")
  rm -rf "$dir"
  if ! written=$("$hspmc" build "$file" --target "$target" -o "$dir" 2>&1); then
    echo "FAIL $plan: hspmc build: $written"
    failed=$((failed + 1))
    continue
  fi
  devices=$(printf '%s\n' "$written" | sed -n 's/.*(\([0-9]*\) device programs).*/\1/p')
  binary=$dir/$(sed -n 's/^plan \([A-Za-z0-9_]*\) .*/\1/p' "$file" | head -1)
  if ! ran=$(timeout 300 mpirun "${root[@]}" --oversubscribe -np "$devices" "$binary" --backend mpi --data "$data" \
    --steps 10 --losses "$dir/gpu.json" 2>&1); then
    why=$(printf '%s\n' "$ran" | grep -m1 'error:' || printf '%s\n' "$ran" | tail -3)
    echo "FAIL $plan ($devices processes): $why"
    failed=$((failed + 1))
    continue
  fi
  "$hspmc" train "$file" --data "$data" --steps 10 --losses "$dir/cpu.json" > /dev/null
  if verdict=$(compare "$dir/gpu.json" "$dir/cpu.json"); then
    echo "ok   $plan ($devices processes): $verdict"
    passed=$((passed + 1))
  else
    echo "FAIL $plan ($devices processes): $verdict"
    failed=$((failed + 1))
  fi
  [ "$target" = cuda ] || continue
  if [ "$devices" -gt "$gpus" ]; then # NCCL: no two devices of a communicator on one GPU
    echo "skip $plan on NCCL: $devices devices, $gpus GPUs"
    ncclSkipped=$((ncclSkipped + 1))
    continue
  fi
  nccl_check "$plan on NCCL ($devices GPUs)" "$dir/nccl.json" "$dir/cpu.json" \
    mpirun "${root[@]}" -np "$devices" "$hspmc" train "$file" --backend nccl --data "$data" --steps 10
done
# Going on after a death on NCCL: hetero4 on four GPUs, device 3 dies in step 4, and the
# survivors recover onto pipeline2_recompute (its communicators made anew among them; those of
# hetero4 aborted); the losses are those of the same recovery on CPU threads. hspmc starts
# mpirun itself (--enable-recovery).
if [ "$target" = cuda ]; then
  recovery=(examples/gpt/plans/hetero4.hspmd --data "$data" --steps 10 --fail 4:3 --recover
    examples/gpt/plans/pipeline2_recompute.hspmd)
  if [ "$gpus" -lt 4 ]; then
    echo "skip recovery on NCCL: it needs 4 GPUs, $gpus here"
    ncclSkipped=$((ncclSkipped + 1))
  elif ! "$hspmc" train "${recovery[@]}" --losses "$build/generated/recovery_cpu.json" > /dev/null 2>&1; then
    echo "FAIL recovery on the CPU (threads)"
    failed=$((failed + 1))
  else
    nccl_check "recovery on NCCL (hetero4, device 3 dies in step 4, onto pipeline2_recompute)" \
      "$build/generated/recovery_nccl.json" "$build/generated/recovery_cpu.json" \
      "$hspmc" train "${recovery[@]}" --backend nccl
  fi
fi
echo "== gpu-check-multi finished in $(($(date +%s) - start)) s: $passed plans match the CPU executor, $failed do not"
[ "$target" = cuda ] && echo "== NCCL backend: $ncclPassed plans match, $ncclFailed do not, $ncclSkipped need more GPUs"
[ "$failed" = 0 ] && [ "$ncclFailed" = 0 ]
