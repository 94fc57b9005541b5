#!/usr/bin/env bash
# On a machine with a GPU (docs/gpu.md): builds the CUDA targets, runs the `gpu` tests (every
# GPU kernel against the CPU's, op by op; the single-device example plans trained 20 steps on
# the GPU against the CPU executor), the binaries hspmc build --target cuda makes of them
# against hspmc train, and bench_gpu, and writes what they print to
# gpu-check.txt (or $1). Aimed at under 8 minutes on one GPU; each part has its own time limit.
# Plans of several GPUs under mpirun: scripts/gpu-check-multi.sh, on a machine that has them.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check.txt}
exec > >(tee "$out") 2>&1
start=$(date +%s)
. scripts/gpu-header.sh gpu-check
echo "== setup"
scripts/setup.sh || echo "setup: failed (no network here?); building with what is installed"
echo "== build (CUDA targets)"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null || { echo "configure failed"; exit 1; }
timeout 300 cmake --build build-gpu -j "$(nproc)" --target gpu_tests bench_gpu hspmc cli_tests || { echo "build failed"; exit 1; }
echo "== gpu tests"
timeout 120 build-gpu/tests/gpu_tests
tests=$?
echo "== hspmc build --target cuda: the generated binaries against hspmc train"
for plan in examples/gpt/plans/single.hspmd examples/llama/plans/tiny_llama_single.hspmd examples/gpt/plans/tp2.hspmd; do
  timeout 120 tests/codegen/check_cuda.sh build-gpu/tools/hspmc/hspmc "$plan" "build-gpu/generated/cuda_$(basename "$plan" .hspmd)"
  code=$?
  [ $code = 0 ] || tests=1
done
echo "== hspmc train --device gpu against the CPU (cli_tests Cli.TrainOnTheGpuOrSayWhyNot: tp2, its two devices on the GPU)"
(cd build-gpu && timeout 120 ctest --output-on-failure -R 'Cli.TrainOnTheGpuOrSayWhyNot') || tests=1
echo "== bench_gpu"
timeout 120 build-gpu/bench/bench_gpu
bench=$?
echo "== bench_gpu --mfu (a GPT of 1.2B parameters, sequence 2048)"
timeout 240 build-gpu/bench/bench_gpu --mfu || bench=1
echo "== gpu-check finished in $(( $(date +%s) - start )) s: tests exit $tests, bench exit $bench"
exit $(( tests || bench ))
