#!/usr/bin/python3
"""bench/documents.py: real tokens per second of training on documents, padded against packed,
measured in one run (hspmc train --documents, docs/mixed-lengths.md).

The corpus is built from this machine's Python sources and license texts
(scripts/build-corpus.py). Each plan trains STEPS steps on it twice, under one plan each time:
  - padded: one document (or piece) per sequence, the rest of the sequence padding;
  - packed: several documents per sequence, attention masked to each.
Both take documents in corpus order up to the plan's B x S tokens; the loss is over real
tokens only, so a step costs the same either way and what differs is how many real tokens it
holds. Per run it prints the real tokens per step, the mean step time and real tokens/s, and
the packed/padded ratio. (Per-step and per-micro-batch plan switching by length are not built
yet: docs/mixed-lengths.md.)

    python3 bench/documents.py build/tools/hspmc/hspmc [--steps 30] [--plans P...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PLANS = ["examples/gpt/plans/docs_short.hspmd", "examples/gpt/plans/docs_medium.hspmd",
         "examples/gpt/plans/docs_long.hspmd", "bench/plans/docs_context1024.hspmd"]


def train(hspmc, plan, corpus, layout, steps, losses):
    command = [hspmc, "train", plan, "--data", corpus, "--documents", "--layout", layout, "--steps", str(steps),
               "--losses", losses]
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
    parser.add_argument("--plans", nargs="+", default=PLANS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        built = subprocess.run([sys.executable, "scripts/build-corpus.py", corpus], check=True, capture_output=True,
                               text=True).stdout
        print("corpus:", built.splitlines()[0].split(": ", 1)[1])
        print(f"{'plan':<18}{'layout':<8}{'real tokens/step':>18}{'step ms':>10}{'real tokens/s':>15}")
        for plan in args.plans:
            name = os.path.basename(plan).removesuffix(".hspmd")
            rates = {}
            for layout in ("padded", "packed"):
                tokens, seconds, rate = train(args.hspmc, plan, corpus, layout, args.steps,
                                              os.path.join(tmp, f"{name}_{layout}.json"))
                rates[layout] = rate
                print(f"{name:<18}{layout:<8}{tokens:>18.0f}{seconds * 1e3:>10.1f}{rate:>15.0f}")
            print(f"{name:<18}packed / padded: {rates['packed'] / rates['padded']:.2f}x real tokens/s")


if __name__ == "__main__":
    main()
