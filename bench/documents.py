#!/usr/bin/python3
"""bench/documents.py: real tokens per second of training on documents on this machine, by
strategy, measured in one run (hspmc train --documents, docs/mixed-lengths.md).

The corpus is built from this machine's Python sources and license texts
(scripts/build-corpus.py). Each run trains STEPS steps on it (the first two, warm-up, left
out of the rate), the loss over real tokens only, so what differs is how many real tokens a
step holds and what a step costs:
  - padded, one plan: one document (or piece) per sequence of the set's longest plan;
  - packed, one plan: several documents per sequence, attention over each one's block;
  - per step (a plan set): each step under the plan of its longest document, switching;
  - per micro-batch (a plan set whose plans hold the state alike): each document's batch
    under the plan of its length, several plans within a step.
Switches and state copies are in the step times. On the whole corpus, and on its documents of
up to 200 bytes (mostly shorter than the plans' sequences). Also, for a context of 1024
(bench/plans/docs_context1024.hspmd), packed against padded on the whole corpus; and the
scheduler (--schedule balanced, the default) against rows in corpus order (--schedule
in-order) on examples/gpt/plans/docs_dp2.hspmd (two data-parallel pipelines of four
micro-batches of one sequence of 128), packed, with steps of half the batch's tokens and of
all of them.

    python3 bench/documents.py build/tools/hspmc/hspmc [--steps 30]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PLAN_SET = "examples/gpt/plans/docs_replicated.planset.toml"
DP2 = "examples/gpt/plans/docs_dp2.hspmd"
LONGEST = "examples/gpt/plans/docs_long.hspmd"
CONTEXT_1024 = "bench/plans/docs_context1024.hspmd"


def train(hspmc, plan, corpus, extra, steps, losses):
    command = [hspmc, "train", plan, "--data", corpus, "--documents", "--steps", str(steps), "--losses",
               losses] + extra
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    with open(losses) as file:
        result = json.load(file)
    seconds = result["step_seconds"][2:]  # the first steps warm up
    tokens = result["real_tokens"][2:]
    return statistics.mean(tokens), statistics.mean(seconds), sum(tokens) / sum(seconds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hspmc")
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for title, limit in (("the whole corpus", None), ("its documents of up to 200 bytes", 200)):
            corpus = os.path.join(tmp, f"corpus{limit}.jsonl")
            built = subprocess.run([sys.executable, "scripts/build-corpus.py", corpus]
                                   + (["--max-bytes", str(limit)] if limit else []),
                                   check=True, capture_output=True, text=True).stdout
            print(f"\n{title}:", built.splitlines()[0].split(": ", 1)[1])
            print(f"{'strategy':<44}{'real tokens/step':>18}{'step ms':>10}{'real tokens/s':>15}"
                  f"{'vs padded (or in corpus order)':>32}")
            runs = [
                ("padded, one plan (docs_long, 2 x 256)", LONGEST, ["--layout", "padded"]),
                ("packed, one plan (docs_long, 2 x 256)", LONGEST, []),
                ("per step, 3 plans (docs_replicated)", PLAN_SET, ["--granularity", "step"]),
                ("per micro-batch, 3 plans (docs_replicated)", PLAN_SET, ["--granularity", "micro-batch"]),
            ]
            if not limit:
                runs += [("padded, context 1024 (4 x 1024)", CONTEXT_1024, ["--layout", "padded"]),
                         ("packed, context 1024 (4 x 1024)", CONTEXT_1024, [])]
                # The scheduler: the ratio is to the same budget in corpus order.
                for budget in ("512", "1024"):
                    runs += [(f"in corpus order, docs_dp2, {budget} tokens", DP2,
                              ["--schedule", "in-order", "--tokens", budget]),
                             (f"balanced, docs_dp2, {budget} tokens", DP2, ["--tokens", budget])]
            base = None
            for k, (name, plan, extra) in enumerate(runs):
                tokens, seconds, rate = train(args.hspmc, plan, corpus, extra, args.steps,
                                              os.path.join(tmp, f"run{k}.json"))
                if "padded" in name or "corpus order" in name:
                    base = rate
                print(f"{name:<44}{tokens:>18.0f}{seconds * 1e3:>10.1f}{rate:>15.0f}{rate / base:>10.2f}x")

if __name__ == "__main__":
    main()
