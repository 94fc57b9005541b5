#!/usr/bin/python3
"""bench/plan_time.py: `hspmc plan` end to end, wall clock, for the settings issue 20 names
(search, every finalist compiled through lint's gate and simulated, the plan written and
linted), with the plan it writes and its simulated step, so that a faster planner can be
checked to choose the same plans.

    python3 bench/plan_time.py build/tools/hspmc/hspmc
"""
import os
import subprocess
import sys
import tempfile
import time

RUNS = [
    ("32B on 16 H800 + 32 H20, 4K x 36", "examples/llama/llama32b.hspmd", "examples/clusters/h800x16_h20x32.toml",
     4096, 36 * 4096),
    ("32B on mixed4x32 (H100, A100, H20, L40S), 4K x 49", "examples/llama/llama32b.hspmd",
     "examples/clusters/mixed4x32.toml", 4096, 49 * 4096),
    ("LLaMA-2-7B on 8 H100 + 8 A100, 128K x 2", "examples/llama/llama2_7b.hspmd",
     "examples/clusters/h100x8_a100x8.toml", 131072, 2 * 131072),
]


def main():
    hspmc = sys.argv[1] if len(sys.argv) > 1 else "build/tools/hspmc/hspmc"
    with tempfile.TemporaryDirectory() as tmp:
        for title, model, cluster, seq, tokens in RUNS:
            out = os.path.join(tmp, "plan.hspmd")
            began = time.perf_counter()
            done = subprocess.run([hspmc, "plan", model, "--cluster", cluster, "--seq", str(seq), "--tokens",
                                   str(tokens), "-o", out], capture_output=True, text=True, timeout=1800)
            seconds = time.perf_counter() - began
            lines = (done.stdout + done.stderr).strip().splitlines()
            print(f"== {title}: {seconds:.1f} s wall clock (exit {done.returncode})")
            print("\n".join("   " + line for line in lines[-2:]))


if __name__ == "__main__":
    main()
