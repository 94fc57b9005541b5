#!/usr/bin/env bash
# Builds PLAN with `hspmc build`, trains it with the generated binary and with `hspmc train`
# (the executor), and requires bitwise-identical losses. With PLAN2 and STEP, the binary is
# built with `--also PLAN2` and both runs switch to PLAN2 before step STEP; with PLAN2 and
# fail:STEP:DEVICE, device DEVICE dies at step STEP in both runs and they go on under PLAN2
# (docs/elastic.md). With `documents`, both train on the data as documents
# (docs/mixed-lengths.md). Without either, the binary must also refuse a --save it cannot write
# before it trains, fail on a full disk (--losses /dev/full, standard output on /dev/full),
# exit 2 on a usage error, and refuse a negative --seed.
# Usage: check_generated.sh HSPMC PLAN OUTDIR [PLAN2 STEP|fail:STEP:DEVICE|documents]
set -euo pipefail
hspmc=$1 plan=$2 out=$3 also=${4:-} step=${5:-}
data=examples/data/gpl-3.txt
rm -rf "$out"
build=() generated=() executor=()
if [ "$also" = documents ]; then
  generated=(--documents --tokens 320) executor=(--documents --tokens 320) also=""
elif [ -n "$also" ]; then
  build=(--also "$also")
  # The binary names plans by name: the plan's name is what follows `plan` in its file.
  name2=$(sed -n 's/^plan \([A-Za-z0-9_]*\) .*/\1/p' "$also" | head -1)
  if [[ "$step" == fail:* ]]; then
    generated=(--fail "${step#fail:}" --recover "$name2")
    executor=(--fail "${step#fail:}" --recover "$also")
  else
    generated=(--switch "$step:$name2")
    executor=(--switch "$step:$also")
  fi
fi
mkdir -p "$(dirname "$out")" # the progress goes beside OUTDIR, which hspmc build makes
built=$("$hspmc" build "$plan" -o "$out" "${build[@]}" 2> "$out.progress")
echo "$built"
# It says how far the compile is on stderr, every tenth of the build's steps, the last included.
last=$(tail -1 "$out.progress")
if ! [[ "$last" =~ ^compiling:\ ([0-9]+)\ of\ ([0-9]+)\ build\ steps$ ]] ||
  [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
  echo "hspmc build's progress did not end at its last step: $(cat "$out.progress")"
  exit 1
fi
name=$(basename "$plan" .hspmd)
binary=$(find "$out" -maxdepth 1 -type f -executable | head -1)
# Its outputs are checked before it trains, as hspmc train checks them.
if [ -z "$also" ] && [ ${#generated[@]} -eq 0 ]; then
  if message=$("$binary" --data "$data" --steps 1 --save "$out/no_such_folder/c.ckpt" 2>&1); then
    echo "the binary accepted --save into a folder that does not exist"
    exit 1
  fi
  expected="$binary: error: cannot write $out/no_such_folder/c.ckpt (--save): the directory '$out/no_such_folder' does not exist"
  if [ "$message" != "$expected" ]; then
    printf 'got:      %s\nexpected: %s\n' "$message" "$expected"
    exit 1
  fi
  # A full disk is an error for its outputs too (/dev/full: every write fails), as for hspmc's.
  if [ -e /dev/full ]; then
    if message=$("$binary" --data "$data" --steps 1 --losses /dev/full 2>&1 >/dev/null); then
      echo "the binary exited 0 writing its losses to /dev/full"
      exit 1
    fi
    expected="$binary: error: /dev/full: cannot write the losses (No space left on device)"
    if [ "$message" != "$expected" ]; then
      printf 'got:      %s\nexpected: %s\n' "$message" "$expected"
      exit 1
    fi
    if message=$("$binary" --data "$data" --steps 1 2>&1 >/dev/full); then
      echo "the binary exited 0 printing to /dev/full"
      exit 1
    fi
    expected="$binary: error: cannot write the standard output ("
    if [ "${message#"$expected"}" = "$message" ]; then
      printf 'got:      %s\nexpected: %s...\n' "$message" "$expected"
      exit 1
    fi
  fi
  # A usage error exits 2, as hspmc's do.
  code=0
  "$binary" --data "$data" --steps -1 > /dev/null 2>&1 || code=$?
  if [ "$code" != 2 ]; then
    echo "the binary's usage error (--steps -1) exited $code, not 2"
    exit 1
  fi
  # --seed is checked as text too (CLI11 took -5 as 2^64 - 5).
  message=$("$binary" --data "$data" --steps 1 --seed -5 2>&1 | head -1 || true)
  if [ "$message" != "--seed: Value -5 is not a whole number from 0" ]; then
    printf 'got:      %s\nexpected: --seed: Value -5 is not a whole number from 0\n' "$message"
    exit 1
  fi
  # Under mpirun with one process too many, the first process says so, once; the others wait
  # for it (they exited first, and mpirun ended it before it printed).
  devices=$(sed -n 's/.*under mpirun -np \([0-9]*\)).*/\1/p' <<<"$built")
  if command -v mpirun > /dev/null && [ -n "$devices" ]; then
    message=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS=detect_leaks=0 \
      -np $((devices + 1)) "$binary" --data "$data" --steps 1 --backend mpi 2>&1 || true)
    expected="$binary: error: mpirun started $((devices + 1)) processes but the plan has $devices \
device$([ "$devices" = 1 ] || echo s): run it with mpirun -np $devices"
    if [ "$(grep -cxF "$expected" <<<"$message")" != 1 ]; then
      printf 'got:      %s\nexpected once: %s\n' "$message" "$expected"
      exit 1
    fi
  fi
fi
"$binary" --data "$data" --steps 10 --losses "$out/generated.json" "${generated[@]}" >/dev/null
"$hspmc" train "$plan" --data "$data" --steps 10 --losses "$out/executor.json" "${executor[@]}" >/dev/null
python3 - "$out/generated.json" "$out/executor.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
print("generated:", a)
print("executor: ", b)
sys.exit(0 if a == b and len(a) == 10 else 1)
PY
echo "$name${also:+ with $also at $step}: generated code and executor give bitwise-identical losses"
