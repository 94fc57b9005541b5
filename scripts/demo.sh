#!/usr/bin/env bash
# The main demo: builds hspmd, checks every model, plan and cluster file, and prints the
# IR of the tiny GPT under a heterogeneous four-device plan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
hspmc=build/tools/hspmc/hspmc
echo "== hspmc check (every file under stdlib/ and examples/)"
find stdlib examples -name '*.hspmd' -o -name '*.toml' | sort | xargs "$hspmc" check
echo "== hspmc dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/plans/raw_annotations.hspmd (first 40 lines)"
"$hspmc" dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/plans/raw_annotations.hspmd | head -n 40
echo "== the 32B model: blocks and parameters"
"$hspmc" dump-ir examples/llama/llama32b.hspmd | grep -o '%blocks\[[0-9]*\]\.attn\.wq = param[^<]*' | tail -n 2
