#!/usr/bin/python3
"""bench/train_vs_pytorch.py HSPMC [STEPS]: tokens/s of hspmd's one-device training step
(the tiny GPT, examples/gpt/plans/single.hspmd) against PyTorch's eager training step on the
same model (its forward IR run with PyTorch ops, autograd and torch.optim.AdamW), the same
initial parameters and data, with the same number of threads (all cores). Both time the
steps only, after one warm-up run each. Prints both and the ratio."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PLAN = os.path.join(ROOT, "examples/gpt/plans/single.hspmd")
DATA = os.path.join(ROOT, "examples/data/gpl-3.txt")


def main():
    hspmc = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    threads = os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        init, graph, losses = (os.path.join(tmp, n) for n in ("init.ckpt", "graph.ir", "losses.json"))
        subprocess.run([hspmc, "train", PLAN, "--data", DATA, "--steps", "0", "--save", init], check=True,
                       stdout=subprocess.DEVNULL)
        with open(graph, "w") as out:
            subprocess.run([hspmc, "dump-ir", PLAN], check=True, stdout=out)
        ours = []
        for _ in range(2):  # the first run warms up
            subprocess.run([hspmc, "train", PLAN, "--data", DATA, "--steps", str(steps), "--losses", losses],
                           check=True, stdout=subprocess.DEVNULL)
            ours.append(json.load(open(losses)))
        theirs = []
        for _ in range(2):
            out = subprocess.run([sys.executable, os.path.join(ROOT, "tests/torch/ir_reference.py"), graph, init, DATA,
                                  "--steps", str(steps), "--args", json.dumps(ours[0]["optimizer_args"]),
                                  "--threads", str(threads)], check=True, capture_output=True, text=True).stdout
            theirs.append(json.loads(out))
    tokens = ours[-1]["batch"] * ours[-1]["seq"] * steps
    a = tokens / ours[-1]["seconds"]
    b = tokens / theirs[-1]["seconds"]
    print(f"tiny GPT training, one device, {steps} steps, {threads} threads:")
    print(f"  hspmd   {a:9.0f} tokens/s")
    print(f"  PyTorch {b:9.0f} tokens/s (eager, torch {__import__('torch').__version__})")
    print(f"  ratio   {a / b:9.2f}")


if __name__ == "__main__":
    main()
