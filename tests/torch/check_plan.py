#!/usr/bin/python3
"""Trains PLAN with hspmc and checks each step's loss against ir_reference.py (PyTorch),
within 1e-4 relative. With --switch STEP:PLAN2 (repeatable) the run switches plans before those
steps, and its losses must also be those of the run that never switches, within 1e-5 relative.
With --documents DATA [--tokens N] [--layout packed|padded] both train on DATA as documents
(docs/mixed-lengths.md).
Usage: check_plan.py HSPMC PLAN [--steps 20] [--mpi] [--switch STEP:PLAN2]... [--documents DATA ...]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "examples/data/gpl-3.txt"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hspmc")
    parser.add_argument("plan")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--mpi", action="store_true", help="train on the MPI backend, one process per device")
    parser.add_argument("--switch", action="append", default=[], help="STEP:PLAN, passed to hspmc train")
    parser.add_argument("--documents", metavar="DATA", help="train on DATA as documents")
    parser.add_argument("--tokens", type=int, help="with --documents: real tokens per step at most")
    parser.add_argument("--layout", choices=["packed", "padded"], help="with --documents: the layout")
    parser.add_argument("--granularity", choices=["step", "micro-batch"], help="with a plan set: plans per step or "
                        "within a step")
    args = parser.parse_args()
    global DATA
    documents = []
    if args.documents:
        DATA = args.documents
        documents = ["--documents"] + (["--tokens", str(args.tokens)] if args.tokens else []) + (
            ["--layout", args.layout] if args.layout else []) + (
            ["--granularity", args.granularity] if args.granularity else [])
    switches = [arg for option in args.switch for arg in ("--switch", option)]
    with tempfile.TemporaryDirectory() as tmp:
        init, graph, losses = (os.path.join(tmp, name) for name in ("init.ckpt", "graph.ir", "losses.json"))
        first = subprocess.run([args.hspmc, "train", args.plan, "--data", DATA, "--steps", "0", "--save", init]
                               + documents, check=True, capture_output=True, text=True).stdout
        devices = own = int(first.split(" on ")[1].split()[0])  # "training M under plan 'P' on N devices ..."
        for option in args.switch:  # every plan's devices are 0..N-1: the run needs the most
            other = subprocess.run([args.hspmc, "train", option.split(":", 1)[1], "--data", DATA, "--steps", "0"],
                                   check=True, capture_output=True, text=True).stdout
            devices = max(devices, int(other.split(" on ")[1].split()[0]))
        plan_set = args.plan.endswith(".toml")  # its first plan's graph; each step's own shape
        if plan_set:
            with open(args.plan, "rb") as file:
                members = [os.path.join(os.path.dirname(args.plan), p) for p in tomllib.load(file)["plans"]]
        with open(graph, "w") as out:
            subprocess.run([args.hspmc, "dump-ir", members[0] if plan_set else args.plan], check=True, stdout=out)

        def train(extra, path, processes):
            command = [args.hspmc, "train", args.plan, "--data", DATA, "--steps", str(args.steps), "--losses", path]
            if args.mpi:
                command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(processes)] + command + [
                    "--backend", "mpi"]
            subprocess.run(command + documents + extra, check=True, stdout=subprocess.DEVNULL)
            return json.load(open(path))

        got = train(switches, losses, devices)
        if switches:
            straight = train([], os.path.join(tmp, "straight.json"), own)["losses"]
            for step, (a, b) in enumerate(zip(got["losses"], straight), 1):
                rel = abs(a - b) / abs(b)
                print(f"step {step:3d}  switched {a:.7f}  never switched {b:.7f}  relative {rel:.1e}"
                      + ("" if rel <= 1e-5 else "  <-- more than 1e-5 apart"))
                if rel > 1e-5:
                    return 1
        if plan_set:
            longest = 0
            for member in members:
                shape = re.search(r"bind B = (\d+), S = (\d+)", open(member).read())
                longest = max(longest, int(shape.group(2)))
            documents += ["--step-documents", json.dumps(got["documents"]), "--piece-length", str(longest)]
        reference = subprocess.run(
            [sys.executable, os.path.join(HERE, "ir_reference.py"), graph, init, DATA, "--steps", str(args.steps),
             "--optimizer", got["optimizer"], "--args", json.dumps(got["optimizer_args"])] + documents,
            check=True, capture_output=True, text=True)
        expected = json.loads(reference.stdout)
        want = expected["losses"]
        if args.documents and expected["real_tokens"] != got["real_tokens"]:
            print(f"real tokens per step: hspmd {got['real_tokens']}, the reference {expected['real_tokens']}")
            return 1
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
