#!/usr/bin/env bash
# Runs the parser + elaboration fuzzer for a bounded time: scripts/fuzz.sh BUILD_DIR SECONDS.
# New interesting inputs go to a scratch folder; the checked-in corpus is only read.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
seconds=${2:-60}
fuzzer="$dir/tests/fuzz/parser_fuzzer"
[[ -x $fuzzer ]] || { echo "fuzz: $fuzzer not built (configure with -DHSPMD_FUZZ=ON and clang)"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ASAN_OPTIONS=detect_leaks=1 "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=4096 -dict=tests/fuzz/hspmd.dict -print_final_stats=1 "$scratch" tests/fuzz/corpus 2>"$scratch.log" \
  || { tail -n 60 "$scratch.log"; echo "fuzz: FAILED (crash input saved in the working folder)"; exit 1; }
grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$scratch.log" | sed 's/^/fuzz: /'
echo "fuzz: no crash, hang or leak in ${seconds} s"
rm -f "$scratch.log"
