#!/usr/bin/python3
"""Builds a document corpus from files every Debian machine has, written by nobody here, and
prints its length distribution (hspmc train --documents, docs/mixed-lengths.md).

Documents: each top-level function and class of the Python standard library's sources
(/usr/lib/python3.*/*.py), and each paragraph of the license texts in
/usr/share/common-licenses (paragraphs are separated by blank lines). Their order is shuffled
with a fixed seed, so a step mixes code and prose. Lengths are in bytes, the tokens of the
byte-level tiny models.

    scripts/build-corpus.py OUT.jsonl [--max-documents N] [--max-bytes B] [--seed 1] [--lengths FILE]

--lengths FILE also writes the documents' lengths, one per line: what `hspmc simulate
--documents` and `hspmc plan --length-distribution` take.
"""
import argparse
import ast
import glob
import json
import os
import random
import sys


def splitlines_no_ff(source):
    """The source's lines with their ends, split at \\r\\n, \\n and \\r only: ast's lines."""
    lines, start, at = [], 0, 0
    while at < len(source):
        c = source[at]
        at += 1
        if c == "\r" and at < len(source) and source[at] == "\n":
            at += 1
        if c in "\r\n":
            lines.append(source[start:at])
            start = at
    if start < len(source):
        lines.append(source[start:])
    return lines


def source_segment(lines, node):
    """ast.get_source_segment(source, node) from the source's lines, split once a file (ast splits
    them again for every node: most of this script's time)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode()
    return "".join([lines[first].encode()[node.col_offset:].decode()] + lines[first + 1:last] +
                   [lines[last].encode()[:node.end_col_offset].decode()])


def python_documents(limit_bytes):
    for path in sorted(glob.glob("/usr/lib/python3*/*.py")):
        try:
            source = open(path, encoding="utf-8").read()
            tree = ast.parse(source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        lines = splitlines_no_ff(source)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                text = source_segment(lines, node)
                if text and "\0" not in text and len(text.encode("utf-8")) <= limit_bytes:
                    yield text, f"{path}:{node.lineno}"


def license_documents(limit_bytes):
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        try:
            lines = open(path, encoding="utf-8").read().split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        paragraph, first = [], 0
        for number, line in enumerate(lines + [""], 1):
            if line.strip(" \t\r"):
                if not paragraph:
                    first = number
                paragraph.append(line)
            elif paragraph:
                text = "\n".join(paragraph)
                if "\0" not in text and len(text.encode("utf-8")) <= limit_bytes:
                    yield text, f"{path}:{first}"
                paragraph = []


def describe(lengths):
    lengths = sorted(lengths)

    def at(q):
        return lengths[int(q * (len(lengths) - 1))]

    print(f"{len(lengths)} documents, {sum(lengths)} bytes; min {lengths[0]}, median {at(0.5)}, p90 {at(0.9)}, "
          f"p99 {at(0.99)}, max {lengths[-1]}")
    low = 1
    while low <= lengths[-1]:
        high = low * 2
        count = sum(low <= n < high for n in lengths)
        tokens = sum(n for n in lengths if low <= n < high)
        print(f"  {low:>6} - {high - 1:<6} {count:6d} documents ({100 * count / len(lengths):5.1f}%), "
              f"{100 * tokens / sum(lengths):5.1f}% of the tokens")
        low = high


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--max-documents", type=int, default=0, help="keep the first N after shuffling (0: all)")
    parser.add_argument("--max-bytes", type=int, default=1 << 20, help="leave out longer documents")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lengths", help="also write the documents' lengths (bytes), one per line")
    args = parser.parse_args()
    documents = list(python_documents(args.max_bytes)) + list(license_documents(args.max_bytes))
    if not documents:
        sys.exit("build-corpus.py: no Python sources under /usr/lib/python3.* and no license texts under "
                 "/usr/share/common-licenses")
    random.Random(args.seed).shuffle(documents)
    if args.max_documents > 0:
        documents = documents[:args.max_documents]
    with open(args.out, "w") as out:
        for text, source in documents:
            out.write(json.dumps({"text": text, "source": source}) + "\n")
    if args.lengths:
        with open(args.lengths, "w") as out:
            out.write("# document lengths in bytes (byte-level tokens), scripts/build-corpus.py\n")
            for text, _ in documents:
                out.write(f"{len(text.encode('utf-8'))}\n")
    print(f"{args.out}: ", end="")
    describe([len(text.encode("utf-8")) for text, _ in documents])


if __name__ == "__main__":
    main()
