#!/usr/bin/python3
"""bench/stragglers.py: what `hspmc train --stragglers` gains when a device slows down, measured.

Three runs of the same plan and data, each step timed (--losses records step_seconds):
  - steady: no straggler;
  - slowed: device 1 becomes FACTORx slower at step 6 (a `slow` event), the run stays on its plan;
  - adapted: the same with --stragglers: after three slow steps the run re-plans for the
    device's measured speed and switches where the predicted gain exceeds the switch's cost.
It prints the mean step time before the slowdown, while slowed, and after the switch (from
two steps after it, against the slowed run over the same steps), the switch's own step, the
planner's prediction for the new plan, and the number of switches. A flicker run (slow in
step 6 only, with --stragglers) must switch nowhere.

    python3 bench/stragglers.py build/tools/hspmc/hspmc [--backend threads|mpi] [--factor 4]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

PLAN = "examples/gpt/plans/dp4_zero_replicas.hspmd"


def train(hspmc, steps, backend, extra, losses):
    command = [hspmc, "train", PLAN, "--data", "examples/data/gpl-3.txt", "--steps", str(steps),
               "--backend", backend, "--losses", losses] + extra
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    with open(losses) as file:
        return json.load(file)["step_seconds"], done.stdout + done.stderr


def mean_ms(seconds, first, last):  # steps first..last, from 1
    return 1e3 * statistics.mean(seconds[first - 1:last])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hspmc")
    parser.add_argument("--backend", default="threads")
    parser.add_argument("--factor", default="4")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="hspmd-stragglers-")
    trace = os.path.join(folder, "slow.trace")
    with open(trace, "w") as file:
        file.write(f"6 1 slow {args.factor}\n")
    flicker = os.path.join(folder, "flicker.trace")
    with open(flicker, "w") as file:
        file.write(f"6 1 slow {args.factor}\n7 1 slow 1\n")
    losses = os.path.join(folder, "losses.json")
    steady, _ = train(args.hspmc, args.steps, args.backend, [], losses)
    slowed, _ = train(args.hspmc, args.steps, args.backend, ["--fault-trace", trace], losses)
    adapted, out = train(args.hspmc, args.steps, args.backend, ["--fault-trace", trace, "--stragglers"], losses)
    _, flickered = train(args.hspmc, 12, args.backend, ["--fault-trace", flicker, "--stragglers"], losses)
    switches = out.count(" is a straggler; devices ")
    print(f"{PLAN.split('/')[-1]} on {args.backend}, device 1 {args.factor}x slower from step 6 of {args.steps}:")
    print(f"  steady run: {mean_ms(steady, 2, 5):.1f} ms a step in steps 2-5, "
          f"{mean_ms(steady, 6, args.steps):.1f} ms in steps 6-{args.steps}")
    print(f"  slowed, no --stragglers: {mean_ms(slowed, 6, args.steps):.1f} ms a step in steps 6-{args.steps}")
    decision = next((l for l in out.splitlines() if "usual compute time in steps" in l), "")
    predicted = re.search(r"predicted at ([0-9.]+) ms a step against ([0-9.]+) ms now", decision)
    if switches and predicted:
        at = int(re.search(r"; step ([0-9]+) runs", out).group(1))  # the first step under the new plan
        after = mean_ms(adapted, at + 1, args.steps)
        print(f"  --stragglers: {switches} switch, before step {at}; slowed steps {mean_ms(adapted, 6, at - 1):.1f} ms, "
              f"the step with the switch {1e3 * adapted[at - 1]:.0f} ms (planning, compiling, moving), "
              f"after it {after:.1f} ms a step (steps {at + 1}-{args.steps}): "
              f"{mean_ms(slowed, at + 1, args.steps) / after:.2f}x the slowed run over the same steps, "
              f"{after / mean_ms(steady, 2, 5):.2f}x the steady run's steps 2-5; "
              f"the planner predicted {predicted.group(1)} ms against {predicted.group(2)} ms measured before")
        total_slowed, total_adapted = sum(slowed), sum(adapted)
        print(f"  whole run: {total_adapted:.2f} s with --stragglers, {total_slowed:.2f} s without "
              f"({total_slowed / total_adapted:.2f}x)")
    else:
        print(f"  --stragglers: {switches} switches; decision: {decision or '(none)'}")
    print(f"  flicker (slow in step 6 only): {flickered.count(' is a straggler; devices ')} switches; "
          f"{sum(1 for l in flickered.splitlines() if 'no re-plan' in l)} flicker line(s)")


if __name__ == "__main__":
    main()
