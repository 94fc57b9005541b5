#!/usr/bin/python3
"""A PyTorch oracle for hspmd training runs (test-only; needs Debian's python3-torch).

It reads a model's forward graph as hspmc prints it (`hspmc dump-ir PLAN`), runs it with
PyTorch ops (autograd for the backward pass, torch.optim for the optimizer), starting from
the initial parameters hspmc exported (`hspmc train PLAN --steps 0 --save FILE`), on the
same batches as hspmd (sequence b of step s starts at token ((s * B + b) * S) modulo the
usable length), and prints the per-step losses as JSON.

    ir_reference.py GRAPH.ir CHECKPOINT DATA --steps 20 --optimizer adamw --lr 1e-3

With --documents (hspmc train --documents, docs/mixed-lengths.md) DATA is read as documents,
each step takes whole documents up to --tokens real tokens and lays them out --layout packed
or padded, attention is masked to each document (from document ids, not hspmd's block
starts) and the loss is PyTorch's cross-entropy ignoring the unscored targets (-1): all
written here from the documented rules, not from hspmd's code.
"""
import argparse
import json
import math
import re
import sys
import time

import torch
import torch.nn.functional as F

LINE = re.compile(r"^\s*(?P<results>%\S+(?:,\s*%\S+)*)\s*=\s*(?P<op>[a-z_]+)(?P<rest>.*)$")


def parse_attrs(text):
    """{a = 1, b = [8, 64], c = "x", d = true} -> dict."""
    attrs = {}
    text = text.strip()
    if not text.startswith("{"):
        return attrs
    body = text[1:text.index("}")]
    for key, value in re.findall(r"(\w+)\s*=\s*(\[[^\]]*\]|\"[^\"]*\"|[^,]+)", body):
        value = value.strip()
        if value.startswith("["):
            attrs[key] = [int(v) for v in value[1:-1].split(",") if v.strip()]
        elif value.startswith('"'):
            attrs[key] = value[1:-1]
        elif value in ("true", "false"):
            attrs[key] = value == "true"
        else:
            attrs[key] = float(value) if any(c in value for c in ".e") else int(value)
    return attrs


def parse_graph(text):
    ops, outputs = [], []
    for line in text.splitlines():
        line = re.sub(r"\s+loc\(.*\)\s*$", "", line)
        if line.strip().startswith("return"):
            outputs = re.findall(r"%[^\s,]+", line)
            continue
        m = LINE.match(line)
        if not m:
            continue
        results = [r.strip() for r in m.group("results").split(",")]
        rest = m.group("rest")
        type_at = rest.rfind(" : ")
        head = rest[:type_at] if type_at >= 0 else rest
        brace = head.find("{")
        operands = re.findall(r"%[^\s,{]+", head[:brace] if brace >= 0 else head)
        attrs = parse_attrs(head[brace:]) if brace >= 0 else {}
        ops.append((results, m.group("op"), operands, attrs))
    return ops, outputs


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


DOCUMENT_IDS = None  # [B, S] per step with --documents: attention only within a document
ANY_BATCH = False  # --step-documents: each step has its own rows and positions


def attention(q, k, v, causal, scale):
    B, S, H, D = q.shape
    T, Hk = k.shape[1], k.shape[2]
    group = H // Hk
    q = q.transpose(1, 2)
    k = k.repeat_interleave(group, dim=2).transpose(1, 2)
    v = v.repeat_interleave(group, dim=2).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        mask = torch.ones(S, T, dtype=torch.bool).triu(1 + T - S)
        scores = scores.masked_fill(mask, float("-inf"))
    if DOCUMENT_IDS is not None:
        other = DOCUMENT_IDS[:, :, None] != DOCUMENT_IDS[:, None, :]  # [B, S, T]
        scores = scores.masked_fill(other[:, None, :, :], float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2)


def run(ops, outputs, values):
    for results, op, operands, attrs in ops:
        if op in ("param", "input"):
            continue
        x = [values[o] for o in operands]
        if op == "matmul":
            out = torch.matmul(x[0], x[1])
        elif op == "add":
            out = x[0] + x[1]
        elif op == "sub":
            out = x[0] - x[1]
        elif op == "mul":
            out = x[0] * x[1]
        elif op == "div":
            out = x[0] / x[1]
        elif op == "neg":
            out = -x[0]
        elif op == "gelu":
            out = F.gelu(x[0])
        elif op == "silu":
            out = F.silu(x[0])
        elif op == "relu":
            out = F.relu(x[0])
        elif op == "softmax":
            out = torch.softmax(x[0], dim=attrs["dim"])
        elif op == "rmsnorm":
            out = rmsnorm(x[0], x[1], attrs.get("eps", 1e-5))
        elif op == "layernorm":
            out = F.layer_norm(x[0], (x[0].shape[-1],), x[1], x[2], attrs.get("eps", 1e-5))
        elif op == "embedding":
            out = F.embedding(x[1].long(), x[0])
        elif op == "reshape":
            shape = list(attrs["shape"])
            if ANY_BATCH and len(shape) >= 2 and x[0].dim() >= 2:  # a step's own [rows, positions]
                shape[0], shape[1] = x[0].shape[0], x[0].shape[1]
            out = x[0].reshape(shape)
        elif op == "transpose":
            out = x[0].transpose(attrs["dim0"], attrs["dim1"])
        elif op in ("unbind", "split"):
            parts = torch.unbind(x[0], dim=attrs["dim"]) if op == "unbind" else None
            for name, part in zip(results, parts):
                values[name] = part
            continue
        elif op == "concat":
            out = torch.cat(x, dim=attrs["dim"])
        elif op in ("sum", "mean"):
            dims = attrs.get("dims", list(range(x[0].dim())))
            f = torch.sum if op == "sum" else torch.mean
            out = f(x[0], dim=dims, keepdim=attrs.get("keepdim", False))
        elif op == "attention":
            out = attention(x[0], x[1], x[2], attrs.get("causal", False),
                            attrs.get("scale", 1 / math.sqrt(x[0].shape[-1])))
        elif op == "cross_entropy":
            out = F.cross_entropy(x[0].reshape(-1, x[0].shape[-1]), x[1].reshape(-1).long(), ignore_index=-1)
        elif op == "constant":
            out = torch.tensor(float(attrs["value"]))
        else:
            sys.exit(f"ir_reference.py: no PyTorch rule for op '{op}'")
        values[results[0]] = out
    return values[outputs[0]]


def load_checkpoint(path):
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        tensors = {}
        for entry in header["tensors"]:
            n = math.prod(entry["shape"]) if entry["shape"] else 1
            data = f.read(4 * n)
            tensors[entry["name"]] = torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(entry["shape"])
    return tensors


def read_documents(path, eod):
    """Each document's tokens, the end-of-document token last."""
    raw = open(path, "rb").read()
    if path.endswith(".bin"):
        width = 4 if path.endswith(".u32.bin") else 2
        tokens = [int.from_bytes(raw[i:i + width], "little") for i in range(0, len(raw), width)]
        documents, current = [], []
        for t in tokens:
            current.append(t)
            if t == eod:
                if len(current) > 1:
                    documents.append(current)
                current = []
        if current:
            documents.append(current + [eod])
        return documents
    if path.endswith(".jsonl"):
        texts = [json.loads(line)["text"].encode("utf-8") for line in raw.split(b"\n") if line.strip(b" \t\r")]
    else:
        texts, lines = [], []
        for line in raw.split(b"\n") + [b""]:
            if line.strip(b" \t\r"):
                lines.append(line)
            elif lines:
                texts.append(b"\n".join(lines))
                lines = []
    return [list(text) + [eod] for text in texts if text]


def document_steps(documents, steps, batch, seq, tokens, layout):
    """Per step: tokens, targets (-1: not scored) and document ids, [batch, seq]."""
    pieces = [(d, begin, min(seq, len(doc) - 1 - begin))
              for d, doc in enumerate(documents) for begin in range(0, len(doc) - 1, seq)]
    budget = tokens or batch * seq
    at, out = 0, []
    for _ in range(steps):
        rows = []  # per row: its pieces
        taken = 0
        while True:
            piece = pieces[at % len(pieces)]
            if rows and taken + piece[2] > budget:
                break
            if layout == "packed":
                row = next((r for r, held in enumerate(rows) if sum(p[2] for p in held) + piece[2] <= seq), None)
            else:
                row = None
            if row is None:
                if len(rows) == batch:
                    break
                rows.append([])
                row = len(rows) - 1
            rows[row].append(piece)
            taken += piece[2]
            at += 1
        ids = torch.zeros(batch, seq, dtype=torch.int64)
        x = torch.full((batch, seq), documents[0][-1], dtype=torch.int32)
        y = torch.full((batch, seq), -1, dtype=torch.int32)
        number = 0
        for b in range(batch):
            ids[b] = -1 - b  # padding: a block of its own per row
            position = 0
            for d, begin, length in (rows[b] if b < len(rows) else []):
                number += 1
                doc = documents[d]
                x[b, position:position + length] = torch.tensor(doc[begin:begin + length])
                y[b, position:position + length] = torch.tensor(doc[begin + 1:begin + length + 1])
                ids[b, position:position + length] = number
                position += length
        out.append((x, y, ids))
    return out


def counted_steps(documents, counts, seq):
    """With a plan set, hspmd chooses how many documents each step takes (`counts`, from its
    --losses file); the loss does not depend on how they lie, so here each piece (of at most
    `seq`, the set's longest S) has a row of its own, padded to the step's longest."""
    pieces = [(d, begin, min(seq, len(doc) - 1 - begin))
              for d, doc in enumerate(documents) for begin in range(0, len(doc) - 1, seq)]
    at, out = 0, []
    for count in counts:
        taken = [pieces[(at + k) % len(pieces)] for k in range(count)]
        at += count
        width = max(length for _, _, length in taken)
        x = torch.full((count, width), documents[0][-1], dtype=torch.int32)
        y = torch.full((count, width), -1, dtype=torch.int32)
        ids = torch.zeros(count, width, dtype=torch.int64)
        for row, (d, begin, length) in enumerate(taken):
            doc = documents[d]
            x[row, :length] = torch.tensor(doc[begin:begin + length])
            y[row, :length] = torch.tensor(doc[begin + 1:begin + length + 1])
            ids[row, length:] = -1
        out.append((x, y, ids))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("graph")
    parser.add_argument("checkpoint")
    parser.add_argument("data")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--args", default="{}", help="optimizer arguments as JSON")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--documents", action="store_true", help="DATA as documents (hspmc train --documents)")
    parser.add_argument("--tokens", type=int, default=0, help="with --documents: real tokens per step at most")
    parser.add_argument("--layout", default="packed", choices=["packed", "padded"])
    parser.add_argument("--granularity", default="step", help="with --step-documents: the run's (no effect here)")
    parser.add_argument("--eod", type=int, default=0)
    parser.add_argument("--step-documents", help="JSON list: the documents each step takes (a plan set's run)")
    parser.add_argument("--piece-length", type=int, default=0, help="with --step-documents: the longest S")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    ops, outputs = parse_graph(open(args.graph).read())
    weights = load_checkpoint(args.checkpoint)
    params = {}
    shapes = {}
    for results, op, _, _ in ops:
        if op == "param":
            params[results[0]] = torch.nn.Parameter(weights[results[0][1:]].clone())
    for line in open(args.graph).read().splitlines():
        m = re.match(r"^\s*(%\S+) = input : i32\[(\d+), (\d+)\]", line)
        if m:
            shapes[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    batch, seq = shapes["%tokens"]
    data = list(open(args.data, "rb").read())
    usable = len(data) - seq
    opt_args = json.loads(args.args)
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(params.values(), lr=opt_args.get("lr", 1e-3),
                                      betas=(opt_args.get("beta1", 0.9), opt_args.get("beta2", 0.999)),
                                      eps=opt_args.get("eps", 1e-8), weight_decay=opt_args.get("weight_decay", 0.01))
    else:
        optimizer = torch.optim.SGD(params.values(), lr=opt_args.get("lr", 1e-2),
                                    momentum=opt_args.get("momentum", 0.0),
                                    weight_decay=opt_args.get("weight_decay", 0.0))
    losses, real_tokens = [], []
    began = time.perf_counter()
    global DOCUMENT_IDS, ANY_BATCH
    if args.documents and args.step_documents:
        ANY_BATCH = True
        laid = counted_steps(read_documents(args.data, args.eod), json.loads(args.step_documents), args.piece_length)
    elif args.documents:
        laid = document_steps(read_documents(args.data, args.eod), args.steps, batch, seq, args.tokens, args.layout)
    for step in range(args.steps):
        tokens = torch.zeros(batch, seq, dtype=torch.int32)
        targets = torch.zeros(batch, seq, dtype=torch.int32)
        if args.documents:
            tokens, targets, DOCUMENT_IDS = laid[step]
            real_tokens.append(int((targets >= 0).sum()))
        for b in range(batch if not args.documents else 0):
            start = ((step * batch + b) * seq) % usable
            tokens[b] = torch.tensor(data[start:start + seq])
            targets[b] = torch.tensor(data[start + 1:start + seq + 1])
        values = dict(params)
        values["%tokens"], values["%targets"] = tokens, targets
        optimizer.zero_grad()
        loss = run(ops, outputs, values)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(json.dumps({"losses": losses, "real_tokens": real_tokens, "seconds": time.perf_counter() - began}))


if __name__ == "__main__":
    main()
