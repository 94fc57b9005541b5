#!/usr/bin/python3
"""bench/documents_simulate.py: tokens/s of training on documents by strategy, simulated on the
clusters' cost models (hspmc simulate SET --documents LENGTHS, docs/mixed-lengths.md).

The lengths are those of a real corpus built on this machine (scripts/build-corpus.py: the
Python standard library's functions and classes and the license paragraphs of Debian), in
bytes, the tokens of a byte-level model. Its shape is CommonCrawl's in the one statistic
Hetu v2 gives for it at 32K context: 97% of the documents are shorter than 8K (this corpus:
97.0%); it has 3130 documents, 4.2 M tokens, so a pass is 15-20 steps of 256K tokens.

Strategies, each over one pass of the corpus, every step simulated under its plan:
  - padded, one plan: a document per sequence of the longest plan (dense attention);
  - packed, one plan: documents packed into its sequences, attention over each document's
    block only (a varlen kernel: attention's cost scales with the pairs computed);
  - per step (Hetu v2): each step under the plan of the smallest S that holds its longest
    document, the switches priced as the state's move on the cluster's links;
  - per micro-batch (hspmd; plans that hold the state alike): each document's batch under the
    plan of its length, several plans one after another within a step, state copies priced
    at memory bandwidth; micro-batches of padding only skipped.
A step's documents are given rows by the scheduler (--schedule balanced); each set is also
priced with rows in corpus order (--schedule in-order), its tokens/s printed below its table.

    python3 bench/documents_simulate.py build/tools/hspmc/hspmc
"""
import os
import re
import subprocess
import sys
import tempfile
import time

RUNS = [
    ("tiny GPT, 4 CPU threads, context 256", "examples/gpt/plans/docs.planset.toml"),
    ("32B on 32 H20, context 32K", "bench/plans/h20/ctx32k.planset.toml"),
    ("32B on 32 H20, context 32K, every plan 4 stages x TP 8", "bench/plans/h20/ctx32k_pp4.planset.toml"),
    ("32B on 32 H20, context 16K", "bench/plans/h20/ctx16k.planset.toml"),
    ("32B on 16 H800 + 32 H20, context 32K", "bench/plans/hetero/ctx32k.planset.toml"),
]


def main():
    hspmc = sys.argv[1] if len(sys.argv) > 1 else "build/tools/hspmc/hspmc"
    with tempfile.TemporaryDirectory() as tmp:
        lengths = os.path.join(tmp, "lengths.txt")
        built = subprocess.run([sys.executable, "scripts/build-corpus.py", os.path.join(tmp, "corpus.jsonl"),
                                "--lengths", lengths], check=True, capture_output=True, text=True).stdout
        print("corpus:", built.splitlines()[0].split(": ", 1)[1])
        values = [int(line) for line in open(lengths) if not line.startswith("#")]
        print(f"shorter than 8K: {100 * sum(v < 8192 for v in values) / len(values):.1f}% of the documents")
        for title, plan_set in RUNS:
            began = time.perf_counter()
            done = subprocess.run([hspmc, "simulate", plan_set, "--documents", lengths], capture_output=True,
                                  text=True, timeout=900)
            if done.returncode != 0:
                sys.exit(f"{plan_set}:\n{done.stdout}{done.stderr}")
            print(f"\n== {title} ({plan_set}, {time.perf_counter() - began:.0f} s to compile and simulate)")
            print("\n".join(done.stdout.splitlines()[1:]))
            # The same with a step's documents given rows in corpus order (no scheduler).
            in_order = subprocess.run([hspmc, "simulate", plan_set, "--documents", lengths, "--schedule", "in-order"],
                                      capture_output=True, text=True, timeout=900)
            if in_order.returncode != 0:
                sys.exit(f"{plan_set}:\n{in_order.stdout}{in_order.stderr}")
            rates = [(line[:44].strip(), found.group(1)) for line in in_order.stdout.splitlines()
                     if (found := re.search(r" ms +(\d+) +[\d.]+x", line))]
            print("in corpus order (--schedule in-order), tokens/s: " + "; ".join(f"{n} {r}" for n, r in rates))


if __name__ == "__main__":
    main()
