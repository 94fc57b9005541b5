#!/usr/bin/env bash
# The main demo: builds hspmd, checks every model, plan and cluster file, shows the IR of the
# tiny GPT under HSPMD annotations, lints the heterogeneous plans, and trains the tiny GPT
# under a heterogeneous 4-device plan (a tensor-parallel pair + a two-stage pipeline, with
# different micro-batch counts) on real text, on the threads backend: the loss falls.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
hspmc=build/tools/hspmc/hspmc
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== hspmc check (every file under stdlib/ and examples/)"
find stdlib examples -name '*.hspmd' -o -name '*.toml' | sort | xargs "$hspmc" check

echo "== hspmc dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/plans/raw_annotations.hspmd (excerpt)"
"$hspmc" dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/plans/raw_annotations.hspmd >"$out/tiny.ir"
grep -E '^graph|plans|%blocks\[0\]\.(wqkv|wo) |%tokens|%targets|blocks\[0\]\.forward\.(q|a|h) ' "$out/tiny.ir"
echo "  ... $(wc -l <"$out/tiny.ir") lines in all"

echo "== hspmc dump-ir examples/gpt/plans/hetero4.hspmd --after deduce-annotations (block 0 and the loss)"
"$hspmc" dump-ir examples/gpt/plans/hetero4.hspmd --after deduce-annotations >"$out/hetero4.ir"
grep -E '%blocks\[0\]\.(wqkv|wo) = |%tokens|%0 = |%0.reshard|blocks\[0\]\.forward\.a = |cross_entropy' "$out/hetero4.ir" | sed 's/ loc(.*//'

echo "== hspmc lint on the heterogeneous plans"
for plan in examples/gpt/plans/hetero4.hspmd examples/llama/plans/llama32b_hetero48.hspmd; do
  echo "$plan:"; "$hspmc" lint "$plan"
done

echo "== hspmc plan: the tiny GPT on a mixed CPU cluster (2 devices at a third of the others' speed)"
"$hspmc" plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 --tokens 256 \
  -o "$out/planned.hspmd" | grep -v '^  '
"$hspmc" lint "$out/planned.hspmd"

echo "== the 32B model (examples/llama/llama32b.hspmd): parameters of its last block"
"$hspmc" dump-ir examples/llama/llama32b.hspmd >"$out/32b.ir"
grep -E '^  %blocks\[63\]\.[a-z_.0-9]+ = param' "$out/32b.ir" | sed 's/ loc(.*//'
echo "  $(grep -c ' = param' "$out/32b.ir") parameters, $(grep -c '^  %' "$out/32b.ir") ops"

echo "== hspmc train examples/gpt/plans/hetero4.hspmd on examples/data/gpl-3.txt (the GNU GPL v3, as text)"
"$hspmc" train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --steps 200 --trace "$out/trace.json"
echo "  (a Chrome trace of the first steps, one track per device, was written; open one in Perfetto with"
echo "   build/tools/hspmc/hspmc train ... --trace trace.json)"
