#!/usr/bin/python3
"""bench/recovery_mpi.py: what surviving a process's death costs on the MPI backend, measured.

For each case, two runs of 12 steps under `hspmc train --backend mpi` (hspmc starts mpirun):
one without failures, one where a device's process dies (SIGKILL) at the start of step 5 and
the run goes on under a recovery plan. The time lost per failure is the difference of their
wall-clock times; it includes detection (up to --heartbeat), the agreement, planning and
moving the state, and the redone step. The recovery line gives the agreement and the move.

    python3 bench/recovery_mpi.py build/tools/hspmc/hspmc [--heartbeat 1]
"""
import argparse
import re
import subprocess
import time

CASES = [
    ("examples/gpt/plans/hetero4.hspmd", "examples/gpt/plans/pipeline2_recompute.hspmd", 3),
    ("examples/gpt/plans/dp2_tp2.hspmd", "tests/elastic/pipeline2_on_1_2.hspmd", 0),
    ("examples/llama/plans/tiny_llama_hetero4.hspmd", "auto", 2),
]


def run(command):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return time.monotonic() - start, done.returncode, done.stdout + done.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hspmc")
    parser.add_argument("--heartbeat", default="1")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    print(f"in-place recovery on MPI (one process per device; a process dies at the start of step 5 of "
          f"{args.steps}; --heartbeat {args.heartbeat} s)")
    for plan, recovery, device in CASES:
        base = [args.hspmc, "train", plan, "--data", "examples/data/gpl-3.txt", "--steps", str(args.steps),
                "--backend", "mpi", "--heartbeat", args.heartbeat]
        clean, code, out = run(base)
        if code != 0:
            raise SystemExit(f"{plan}: the run without failures failed:\n{out}")
        failed, code, out = run(base + ["--fail", f"5:{device}", "--recover", recovery])
        if code != 0:
            raise SystemExit(f"{plan}: the run with a failure failed:\n{out}")
        line = next(l for l in out.splitlines() if " agreed in " in l)
        agreed = re.search(r"agreed in ([0-9.]+) ms", line).group(1)
        moved = re.search(r"moved ([0-9.]+ MiB in [0-9.]+ ms)", line).group(1)
        planned = re.search(r"\(planned for them in ([0-9]+ ms), compiled in ([0-9]+ ms)", line)
        replan = f", re-planned in {planned.group(1)} and compiled in {planned.group(2)}" if planned else ""
        print(f"  {plan.split('/')[-1]} -> {recovery.split('/')[-1]} (device {device} dies): {args.steps} steps in "
              f"{clean:.2f} s without, {failed:.2f} s with the death: {failed - clean:.2f} s lost "
              f"(agreed in {agreed} ms{replan}, moved {moved})")


if __name__ == "__main__":
    main()
