#!/usr/bin/python3
"""bench/train_vs_pytorch.py HSPMC [STEPS]: tokens/s of hspmd's one-device training step against
PyTorch's eager training step on the same model (its forward IR run with PyTorch ops, autograd
and torch.optim.AdamW), the same initial parameters and data, with the same number of threads
(all cores), on four models:

  tiny   examples/gpt/plans/single.hspmd  (d 64, 8 layers, S 64, B 8)
  mid    bench/plans/mid.hspmd            (d 128, 4 layers, S 256, B 8)
  h512   bench/plans/h512.hspmd           (d 512, 4 layers, S 128, B 8)
  odd    bench/plans/odd.hspmd            (d 96, 3 layers, S 100, B 6: a shape no kernel was tuned for)

Both time the steps only, after one warm-up run each. For each model it prints both rates, their
ratio, and hspmd's model FLOP/s (the matmuls of forward and backward: 6 x tokens x the weights'
multiply-adds, plus attention's 12 x layers x S x d per token) as a share of this machine's sgemm
peak, measured in the same run: OpenBLAS's cblas_sgemm (the library hspmd calls) on 2048^3 with
all threads."""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "examples/data/gpl-3.txt")
MODELS = [("tiny", "examples/gpt/plans/single.hspmd"), ("mid", "bench/plans/mid.hspmd"),
          ("h512", "bench/plans/h512.hspmd"), ("odd", "bench/plans/odd.hspmd")]


def sgemm_peak(threads, n=2048, repeats=5):
    """GFLOP/s of OpenBLAS's cblas_sgemm on n x n x n, the best of `repeats`."""
    blas = ctypes.CDLL("libopenblas.so.0")
    blas.openblas_set_num_threads(threads)
    a, b, c = torch.rand(n, n), torch.rand(n, n), torch.zeros(n, n)
    f = ctypes.c_float
    best = float("inf")
    for _ in range(repeats + 1):  # the first warms up
        began = time.perf_counter()
        blas.cblas_sgemm(101, 111, 111, n, n, n, f(1.0), ctypes.c_void_p(a.data_ptr()), n,
                         ctypes.c_void_p(b.data_ptr()), n, f(0.0), ctypes.c_void_p(c.data_ptr()), n)
        best = min(best, time.perf_counter() - began)
    return 2.0 * n ** 3 / best / 1e9


def model_flops_per_token(plan, seq):
    """Training FLOPs per token from the model's GPT(...) line: 6 x the matmul weights (QKV,
    projection, two FFN matrices per layer, the head) plus attention's 12 x layers x S x d."""
    text = open(plan).read()
    imported = re.search(r'import "([^"]+\.hspmd)"', text)
    if imported:
        text += open(os.path.join(os.path.dirname(plan), imported.group(1))).read()
    args = dict((k, int(v)) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", re.search(r"GPT\(([^)]*)\)", text).group(1)))
    d, layers, ffn, vocab = args["d"], args["layers"], args["ffn"], args["vocab"]
    weights = layers * (4 * d * d + 2 * d * ffn) + d * vocab
    return 6 * weights + 12 * layers * seq * d


def measure(hspmc, plan, steps, threads, tmp):
    init, graph, losses = (os.path.join(tmp, n) for n in ("init.ckpt", "graph.ir", "losses.json"))
    subprocess.run([hspmc, "train", plan, "--data", DATA, "--steps", "0", "--save", init], check=True,
                   stdout=subprocess.DEVNULL)
    with open(graph, "w") as out:
        subprocess.run([hspmc, "dump-ir", plan], check=True, stdout=out)
    ours = []
    for _ in range(2):  # the first run warms up
        subprocess.run([hspmc, "train", plan, "--data", DATA, "--steps", str(steps), "--losses", losses],
                       check=True, stdout=subprocess.DEVNULL)
        ours.append(json.load(open(losses)))
    theirs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tests/torch/ir_reference.py"), graph, init, DATA,
                              "--steps", str(steps), "--args", json.dumps(ours[0]["optimizer_args"]),
                              "--threads", str(threads)], check=True, capture_output=True, text=True).stdout
        theirs.append(json.loads(out))
    tokens = ours[-1]["batch"] * ours[-1]["seq"] * steps
    return tokens / ours[-1]["seconds"], tokens / theirs[-1]["seconds"], ours[-1]["seq"]


def main():
    hspmc = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    threads = os.cpu_count()
    peak = sgemm_peak(threads)
    print(f"one-device training, {steps} steps, {threads} threads, torch {torch.__version__} eager; "
          f"sgemm peak {peak:.1f} GFLOP/s (OpenBLAS, 2048^3)")
    print(f"  {'model':6} {'hspmd tok/s':>12} {'PyTorch tok/s':>14} {'ratio':>6} {'GFLOP/s':>8} {'of peak':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, plan in MODELS:
            plan = os.path.join(ROOT, plan)
            ours, theirs, seq = measure(hspmc, plan, steps, threads, tmp)
            gflops = ours * model_flops_per_token(plan, seq) / 1e9
            print(f"  {name:6} {ours:12.0f} {theirs:14.0f} {ours / theirs:6.2f} {gflops:8.1f} {gflops / peak:7.0%}",
                  flush=True)


if __name__ == "__main__":
    main()
