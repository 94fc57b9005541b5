#!/usr/bin/env bash
# The whole test suite: the normal build and its tests, the same tests under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the parser fuzzer for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$(date +%s)
# ctest runs nproc tests at once, and a one-device training uses every core for its kernels
# (docs/runtime.md): OpenMP threads that wait by sleeping, not spinning, leave the cores to
# the other tests.
export OMP_WAIT_POLICY=passive

echo "== formatting (clang-format, our sources only)"
git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v '^grammar/generated/' | xargs clang-format --dry-run --Werror

echo "== build (RelWithDebInfo, warnings are errors)"
scripts/build.sh build
echo "== tests (build done at $(( $(date +%s) - start )) s)"
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== build and tests under ASan+UBSan (clang, with the libFuzzer target; at $(( $(date +%s) - start )) s)"
# The PyTorch comparisons (label torch) check numbers, which the build above did; here the
# training tests run 4 steps instead of 20, the tests that take half a minute or more under the
# sanitizers skip (HSPMD_SKIP_HEAVY, tests/unit/support/Heavy.h), and the plan fuzzer runs 30 s.
HSPMD_PLAN_FUZZ_SECONDS=30 CC=clang CXX=clang++ \
  scripts/build.sh build-asan -DHSPMD_SANITIZE=address,undefined -DHSPMD_FUZZ=ON -DHSPMD_BENCH=OFF
echo "== sanitizer build done at $(( $(date +%s) - start )) s"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HSPMD_TRAIN_STEPS=4 HSPMD_SKIP_HEAVY=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE torch

echo "== fuzzing (at $(( $(date +%s) - start )) s) the parser and elaborator for ${HSPMD_FUZZ_SECONDS:-60} s"
scripts/fuzz.sh build-asan "${HSPMD_FUZZ_SECONDS:-60}"

echo "== test suite finished in $(( $(date +%s) - start )) s"
