#!/usr/bin/python3
"""bench/data_size.py: what the size of the training data costs `hspmc train`, in the same run:
one step of the single-device tiny GPT on the example text (35 KB), on 1 GiB of text and on
1 GiB of 16-bit tokens (that text's first 512 MiB, a token a byte), then the example text and
the 1 GiB of text as documents (--documents: paragraphs), wall clock and the process's peak
memory. Text and token files are read where they lie, a batch at a time (runtime/Data.h);
token files are checked against the vocabulary as they are opened, a chunk at a time, and
documents are found in the file the same way (runtime/Documents.h): the time that grows with
the file.

    python3 bench/data_size.py build/tools/hspmc/hspmc

Writes the two large files in a temporary folder (3 GiB of disk for the run) and removes them.
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "data", "gpl-3.txt")
PLAN = os.path.join(ROOT, "examples", "gpt", "plans", "single.hspmd")
GIB = 1 << 30


def one_step(hspmc, data, *options):
    """Seconds and peak resident MiB of `hspmc train PLAN --data DATA --steps 1 OPTIONS`."""
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(hspmc, [hspmc, "train", PLAN, "--data", data, "--steps", "1", *options])
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - began
    if status != 0:
        sys.exit(f"hspmc train --data {data} failed (status {status})")
    return seconds, usage.ru_maxrss / 1024


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    hspmc = sys.argv[1]
    example = open(EXAMPLE, "rb").read()
    with tempfile.TemporaryDirectory() as folder:
        text, tokens = os.path.join(folder, "corpus.txt"), os.path.join(folder, "corpus.bin")
        with open(text, "wb") as out:
            written = 0
            while written < GIB:
                out.write(example)
                written += len(example)
        with open(text, "rb") as source, open(tokens, "wb") as out:
            for _ in range(512):
                chunk = source.read(1 << 20)
                wide = bytearray(2 * len(chunk))
                wide[0::2] = chunk
                out.write(wide)
        rows = [("example text, 35 KB", EXAMPLE, ()), ("text, 1 GiB", text, ()),
                ("16-bit tokens, 1 GiB", tokens, ()),
                ("documents, 35 KB", EXAMPLE, ("--documents",)), ("documents, 1 GiB", text, ("--documents",))]
        print("hspmc train examples/gpt/plans/single.hspmd --steps 1, by the size of --data")
        print(f"  {'data':24} {'seconds':>8} {'peak MiB':>9}")
        base = None
        for name, path, options in rows:
            seconds, mib = one_step(hspmc, path, *options)
            base = base or seconds
            print(f"  {name:24} {seconds:8.2f} {mib:9.1f}   ({seconds / base:.1f}x the example's time)")


if __name__ == "__main__":
    main()
