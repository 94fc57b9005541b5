#!/usr/bin/python3
"""bench/startup.py: what an hspmc command costs before it does anything, against what linking
cuBLAS or COIN-OR CBC costs a process, in the same run. Every command (check, lint, plan, train)
pays its process's start; hspmc loads cuBLAS only when a GPU stream is made
(runtime/gpu/Kernels.cu), since libcublasLt's static initializers run in every process that
links it, and CBC only when the planner first solves an integer program (planner/Cbc.h).

    python3 bench/startup.py build/tools/hspmc/hspmc

Prints the median wall clock of 15 runs each: an empty C++ program, the same program linked
with the toolkit's cuBLAS (skipped where there is none), with CBC's libCbcSolver,
`hspmc --version`, and `hspmc check` of a small plan.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

CUDA_LIB = "/usr/local/cuda/lib64" if os.path.isdir("/usr/local/cuda/lib64") else "/usr/local/cuda/lib"


def median_seconds(command, runs=15):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def empty_program(folder, libraries, suffix=""):
    source = os.path.join(folder, "empty.cpp")
    with open(source, "w") as f:
        f.write("int main() { return 0; }\n")
    binary = os.path.join(folder, "empty" + suffix)
    link = ["-L" + CUDA_LIB, "-Wl,--no-as-needed"] + libraries + ["-Wl,-rpath," + CUDA_LIB] if libraries else []
    subprocess.run(["c++", source, "-o", binary] + link, check=True, capture_output=True)
    return binary


def main():
    hspmc = sys.argv[1] if len(sys.argv) > 1 else "build/tools/hspmc/hspmc"
    if not os.access(hspmc, os.X_OK):
        sys.exit(f"bench/startup.py: no hspmc to run at '{hspmc}' (build it with scripts/build.sh)")
    with tempfile.TemporaryDirectory() as folder:
        rows = [("empty C++ program", [empty_program(folder, [])])]
        try:
            rows.append(("empty C++ program linking cuBLAS", [empty_program(folder, ["-lcublas"], "_cublas")]))
        except subprocess.CalledProcessError:
            print("(no cuBLAS to link here: that row is left out)")
        try:
            rows.append(("empty C++ program linking CBC", [empty_program(folder, ["-lCbcSolver"], "_cbc")]))
        except subprocess.CalledProcessError:
            print("(no CBC to link here: that row is left out)")
        rows.append(("hspmc --version", [hspmc, "--version"]))
        rows.append(("hspmc check examples/gpt/plans/tp2.hspmd", [hspmc, "check", "examples/gpt/plans/tp2.hspmd"]))
        base = None
        for name, command in rows:
            seconds = median_seconds(command)
            base = base if base is not None else seconds
            print(f"{name:45s} {seconds * 1e3:7.1f} ms  ({(seconds - base) * 1e3:+.1f} ms over the empty program)")


if __name__ == "__main__":
    main()
