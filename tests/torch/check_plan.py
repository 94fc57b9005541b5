#!/usr/bin/python3
"""Trains PLAN with hspmc and checks each step's loss against ir_reference.py (PyTorch),
within 1e-4 relative. With --switch STEP:PLAN2 (repeatable) the run switches plans before those
steps, and its losses must also be those of the run that never switches, within 1e-5 relative.
Usage: check_plan.py HSPMC PLAN [--steps 20] [--mpi] [--switch STEP:PLAN2]..."""
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
    parser.add_argument("--switch", action="append", default=[], help="STEP:PLAN, passed to hspmc train")
    args = parser.parse_args()
    switches = [arg for option in args.switch for arg in ("--switch", option)]
    with tempfile.TemporaryDirectory() as tmp:
        init, graph, losses = (os.path.join(tmp, name) for name in ("init.ckpt", "graph.ir", "losses.json"))
        first = subprocess.run([args.hspmc, "train", args.plan, "--data", DATA, "--steps", "0", "--save", init],
                               check=True, capture_output=True, text=True).stdout
        devices = own = int(first.split(" on ")[1].split()[0])  # "training M under plan 'P' on N devices ..."
        for option in args.switch:  # every plan's devices are 0..N-1: the run needs the most
            other = subprocess.run([args.hspmc, "train", option.split(":", 1)[1], "--data", DATA, "--steps", "0"],
                                   check=True, capture_output=True, text=True).stdout
            devices = max(devices, int(other.split(" on ")[1].split()[0]))
        with open(graph, "w") as out:
            subprocess.run([args.hspmc, "dump-ir", args.plan], check=True, stdout=out)

        def train(extra, path, processes):
            command = [args.hspmc, "train", args.plan, "--data", DATA, "--steps", str(args.steps), "--losses", path]
            if args.mpi:
                command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(processes)] + command + [
                    "--backend", "mpi"]
            subprocess.run(command + extra, check=True, stdout=subprocess.DEVNULL)
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
