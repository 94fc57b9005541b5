#!/usr/bin/env bash
# hspmc build --target cuda: builds PLAN (one device) into a binary that runs its kernels on
# GPU 0, and, on a machine with a GPU, trains it 10 steps and compares the losses with
# `hspmc train` (the CPU executor): within 1e-5 relative. Without a GPU the binary must refuse
# before it trains, with CUDA's reason and exit 1 (on --backend nccl too, where it has it); the
# test then exits 77 (ctest: skipped).
# Usage: check_cuda.sh HSPMC PLAN OUTDIR
set -euo pipefail
hspmc=$1 plan=$2 out=$3
data=examples/data/gpl-3.txt
rm -rf "$out"
built=$("$hspmc" build "$plan" --target cuda -o "$out")
echo "$built"
binary=$(find "$out" -maxdepth 1 -type f -executable | head -1)
# The line that says how to run it names the backend it has for several GPUs.
backend=mpi
if "$binary" --help | grep -q 'nccl'; then backend=nccl; fi
if [[ "$built" != *"(run it with --data FILE; --backend $backend under mpirun -np "* ]]; then
  echo "hspmc build's last line does not name --backend $backend: $built"
  exit 1
fi
if message=$("$binary" --data "$data" --steps 10 --losses "$out/gpu.json" 2>&1); then
  "$hspmc" train "$plan" --data "$data" --steps 10 --losses "$out/cpu.json" > /dev/null
  python3 - "$out/gpu.json" "$out/cpu.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
print("gpu:", a)
print("cpu:", b)
sys.exit(0 if len(a) == len(b) == 10 and all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(a, b)) else 1)
PY
  echo "$plan: the CUDA binary trains to the executor's losses (1e-5)"
  exit 0
fi
expected="$binary: error: no GPU to run on (CUDA: "
if [ "${message#"$expected"}" = "$message" ] || [ "$(printf '%s\n' "$message" | wc -l)" != 1 ]; then
  printf 'got:      %s\nexpected: %s...)\n' "$message" "$expected"
  exit 1
fi
# Its NCCL backend (where hspmc's build found NCCL) refuses alike.
if "$binary" --help | grep -q 'nccl'; then
  nccl=$("$binary" --data "$data" --steps 10 --backend nccl 2>&1) && { echo "--backend nccl ran without a GPU"; exit 1; }
  if [ "${nccl#"$expected"}" = "$nccl" ]; then
    printf 'got:      %s\nexpected: %s...)\n' "$nccl" "$expected"
    exit 1
  fi
fi
echo "$plan: built for CUDA and linked; no GPU here, and the binary says so: $message"
exit 77
