#!/usr/bin/python3
"""Trains PLAN with hspmc and checks each step's loss against ir_reference.py (PyTorch),
within 1e-4 relative. Usage: check_plan.py HSPMC PLAN [--steps 20] [--backend threads|mpi]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "examples/data/gpl-3.txt"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hspmc")
    parser.add_argument("plan")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--mpi", action="store_true", help="train on the MPI backend, one process per device")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        init, graph, losses = (os.path.join(tmp, name) for name in ("init.ckpt", "graph.ir", "losses.json"))
        first = subprocess.run([args.hspmc, "train", args.plan, "--data", DATA, "--steps", "0", "--save", init],
                               check=True, capture_output=True, text=True).stdout
        devices = int(first.split(" on ")[1].split()[0])  # "training M under plan 'P' on N devices ..."
        with open(graph, "w") as out:
            subprocess.run([args.hspmc, "dump-ir", args.plan], check=True, stdout=out)
        train = [args.hspmc, "train", args.plan, "--data", DATA, "--steps", str(args.steps), "--losses", losses]
        if args.mpi:
            train = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(devices)] + train + ["--backend", "mpi"]
        subprocess.run(train, check=True, stdout=subprocess.DEVNULL)
        got = json.load(open(losses))
        reference = subprocess.run(
            [sys.executable, os.path.join(HERE, "ir_reference.py"), graph, init, DATA, "--steps", str(args.steps),
             "--optimizer", got["optimizer"], "--args", json.dumps(got["optimizer_args"])],
            check=True, capture_output=True, text=True)
        want = json.loads(reference.stdout)["losses"]
    bad = 0
    for step, (a, b) in enumerate(zip(got["losses"], want), 1):
        rel = abs(a - b) / abs(b)
        flag = "" if rel <= 1e-4 else "  <-- more than 1e-4 apart"
        bad += rel > 1e-4
        print(f"step {step:3d}  hspmd {a:.7f}  pytorch {b:.7f}  relative {rel:.1e}{flag}")
    if len(got["losses"]) != args.steps or len(want) != args.steps:
        print(f"expected {args.steps} losses, got {len(got['losses'])} and {len(want)}")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
