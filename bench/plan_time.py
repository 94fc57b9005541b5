#!/usr/bin/python3
"""bench/plan_time.py: `hspmc plan` end to end, wall clock, for the settings issue 20 names
(search, finalists compiled through lint's gate and simulated, the plan written and
checked), with the plan it writes and its simulated step; each setting also with
--every-finalist (every finalist compiled, none left out by the estimates, as before they
ordered the work), in the same run, to check that leaving finalists out keeps the plan.

    python3 bench/plan_time.py build/tools/hspmc/hspmc [--quick]

--quick skips the --every-finalist runs (about a minute each on 2 cores).
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


def plan(hspmc, model, cluster, seq, tokens, out, extra):
    began = time.perf_counter()
    done = subprocess.run([hspmc, "plan", model, "--cluster", cluster, "--seq", str(seq), "--tokens", str(tokens),
                           "-o", out] + extra, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - began
    lines = (done.stdout + done.stderr).strip().splitlines()
    compiled = sum(1 for line in lines if ", simulated " in line)
    left_out = sum(1 for line in lines if line.endswith("not compiled"))
    text = open(out).read() if os.path.exists(out) else ""
    body = text[text.find("\nplan "):]  # without the comment line naming the strategy
    return seconds, done.returncode, lines[-2:], compiled, left_out, body


def main():
    hspmc = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "build/tools/hspmc/hspmc"
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        for title, model, cluster, seq, tokens in RUNS:
            out = os.path.join(tmp, "plan.hspmd")
            seconds, code, last, compiled, left_out, body = plan(hspmc, model, cluster, seq, tokens, out, [])
            print(f"== {title}: {seconds:.1f} s wall clock (exit {code}), {compiled} finalists compiled, "
                  f"{left_out} left out")
            print("\n".join("   " + line for line in last))
            if quick:
                continue
            every, code2, last2, compiled2, _, body2 = plan(hspmc, model, cluster, seq, tokens, out,
                                                             ["--every-finalist"])
            print(f"   --every-finalist: {every:.1f} s (exit {code2}), {compiled2} compiled: "
                  f"{every / seconds:.1f}x the time; "
                  f"{'the same plan' if body == body2 else 'ANOTHER PLAN: ' + last2[0]}")


if __name__ == "__main__":
    main()
