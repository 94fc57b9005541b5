#!/usr/bin/env bash
# Builds PLAN with `hspmc build`, trains it with the generated binary and with `hspmc train`
# (the executor), and requires bitwise-identical losses. Usage: check_generated.sh HSPMC PLAN OUTDIR
set -euo pipefail
hspmc=$1 plan=$2 out=$3
data=examples/data/gpl-3.txt
rm -rf "$out"
"$hspmc" build "$plan" -o "$out"
name=$(basename "$plan" .hspmd)
binary=$(find "$out" -maxdepth 1 -type f -executable | head -1)
"$binary" --data "$data" --steps 10 --losses "$out/generated.json" >/dev/null
"$hspmc" train "$plan" --data "$data" --steps 10 --losses "$out/executor.json" >/dev/null
python3 - "$out/generated.json" "$out/executor.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
print("generated:", a)
print("executor: ", b)
sys.exit(0 if a == b and len(a) == 10 else 1)
PY
echo "$name: generated code and executor give bitwise-identical losses"
