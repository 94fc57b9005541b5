#!/usr/bin/env python3
"""Writes the diagnostics corpus: one malformed .hspmd file per case, each starting with
the diagnostics it must produce as `// expect: LINE:COL: SEVERITY: MESSAGE` lines (notes in
other files carry their file name). The expectations are written here by hand; line numbers
below count from the first line of code, and are shifted past the expect lines when written.
Run it after editing a case: python3 tests/diagnostics/make_cases.py"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def case(name, code, expects):
    CASES.append((name, code.lstrip("\n"), expects))


GPT_PLAN = 'import "nn"\n\nplan p for GPT {\n  bind B = 8, S = 64\n%s\n}\n'


def plan(body):
    return GPT_PLAN % body

# ---------------------------------------------------------------- syntax
case("syntax_missing_brace", """
layer L(d: int) {
  param w = ones[d]
""", [(3, 1, "error", "unexpected end of file; expected 'layer', '}', 'param', 'let' or 'fn'")])

case("syntax_bad_character", """
layer L(d: int) {
  param w = ones[d] $
}
""", [(2, 21, "error", "unexpected character '$'")])

case("syntax_unterminated_string", """
import "nn
""", [(1, 8, "error", "unterminated string")])

case("syntax_missing_expression", """
layer L(d: int) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let y =
    return x
  }
}
""", [(4, 5, "error", "unexpected 'return'; expected an expression")])

case("syntax_let_without_name", """
layer L(d: int) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let = x
    return x
  }
}
""", [(3, 9, "error", "unexpected '='; expected a name")])

case("syntax_annotation_missing_colon", plan("  annotate wte = [0..4] S0"),
     [(5, 25, "error", "unexpected 'S0'; expected ':'")])

case("syntax_annotation_missing_placement", plan("  annotate wte = { [0, 1]: S0 | [2, 3]: S0 }"),
     [(6, 1, "error", "unexpected '}'; expected a name")])

case("syntax_float_without_digits", """
layer L(d: int) {
  param w = normal[d](std = 1.)
}
""", [(2, 31, "error", "unexpected ')'; expected a name")])

case("syntax_top_level_garbage", """
foo bar
""", [(1, 1, "error", "unexpected 'foo'; expected 'import', 'layer', 'model', 'plan' or end of file")])

case("syntax_nested_too_deeply", "model M(d: int = 1) {\n  let x = " + "(" * 250 + "1" + ")" * 250 + "\n}\n",
     [(2, 210, "error", "expression nested too deeply (more than 200 levels)")])

case("syntax_stage_clause", plan("  pipeline a {\n    stage devices [0] tp two\n  }"),
     [(6, 26, "error", "unexpected 'two'; expected an integer")])

# After a stage the grammar expects only 'stage' or '}': the message names the clauses too.
case("syntax_unknown_stage_clause", plan("  pipeline a {\n    stage devices [0, 1] dp 2 layers blocks\n  }"),
     [(6, 26, "error", "unexpected 'dp'; expected a stage clause (devices, tp, cp, hp, layers, with, zero, "
                       "recompute), 'stage' or '}'")])

case("syntax_unknown_plan_item", plan("  microbatches 4"),
     [(5, 3, "error", "unexpected 'microbatches'; expected a plan item (cluster, bind, optimizer, schedule, zero, "
                      "recompute, chunked, precision, pipeline, annotate, reshard) or '}'")])

case("syntax_annotation_expected", plan("  annotate wte = devices"),
     [(5, 18, "error", "unexpected 'devices'; expected an annotation such as '[0..4]: S0'")])

case("syntax_type_expected", """
layer L(d: int) {
  fn forward(x: 42) -> f32[B, d] {
    return x
  }
}
""", [(2, 17, "error", "unexpected '42'; expected a type such as 'f32[B, S, d]'")])

case("syntax_stage_layers_path", plan("  pipeline a {\n    stage devices [0] layers [0:2]\n  }"),
     [(6, 30, "error", "unexpected '['; expected a path such as 'blocks[0:4]' or 'wte'")])

# ---------------------------------------------------------------- names
case("name_unknown", """
model M(d: int = 4) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return y
  }
}
""", [(3, 12, "error", "unknown name 'y'")])

case("name_unknown_layer", """
model M(d: int = 4) {
  layer blocks = Blok(d) * 2
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return blocks(x)
  }
}
""", [(2, 18, "error", "unknown layer 'Blok'")])

case("name_unknown_builtin_argument", """
model M(d: int = 4) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return softmax(x, axis = 1)
  }
}
""", [(3, 23, "error", "'softmax' has no argument 'axis'")])

case("name_duplicate_member", """
model M(d: int = 4) {
  param w = ones[d]
  param w = zeros[d]
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x * w
  }
}
""", [(3, 9, "error", "'w' is already defined in M")])

case("name_duplicate_module", """
layer L(d: int) {
  param w = ones[d]
}
layer L(d: int) {
  param w = ones[d]
}
""", [(4, 7, "error", "'L' is already defined"), (1, 7, "note", "first defined here")])

case("name_unknown_import", """
import "nosuch"
""", [(1, 8, "error", "cannot find import \"nosuch\" (looked for tests/diagnostics/nosuch.hspmd and stdlib/nosuch.hspmd)")])

case("name_model_parameter_without_default", """
model M(d: int) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x
  }
}
""", [(1, 9, "error", "model parameter 'd' needs a default value")])

case("name_unknown_layer_parameter", """
import "nn"
model M(d: int = 4) {
  layer lin = Linear(d, d, foo = 1)
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return lin(x)
  }
}
""", [(3, 28, "error", "layer 'Linear' has no parameter 'foo'")])

case("name_missing_layer_argument", """
import "nn"
model M(d: int = 4) {
  layer lin = Linear(d)
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return lin(x)
  }
}
""", [(3, 15, "error", "missing argument 'dout' for layer 'Linear'"),
      ("stdlib/nn.hspmd", 7, 24, "note", "parameter declared here")])

case("name_model_used_as_layer", """
import "nn"
model M(d: int = 4) {
  layer g = GPT()
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return x
  }
}
""", [(3, 13, "error", "'GPT' is a model; only layers can be used inside another module")])

case("name_model_without_forward", """
model M(d: int = 4) {
  param w = ones[d]
}
""", [(1, 7, "error", "model 'M' has no 'fn forward'")])

case("name_fn_without_return", """
model M(d: int = 4) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let y = x
  }
}
""", [(4, 3, "error", "'M.forward' ends without 'return'")])

case("name_builtin_clash", """
layer softmax(d: int) {
  param w = ones[d]
}
""", [(1, 7, "error", "'softmax' is the name of a built-in function")])

case("name_unknown_initializer", """
layer L(d: int) {
  param w = randn[d]
}
model M(d: int = 4) {
  layer l = L(d)
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x
  }
}
""", [(2, 9, "error", "unknown initializer 'randn'; expected zeros, ones, normal or uniform")])

case("name_unknown_dtype", """
model M(d: int = 4) {
  param w: f64 = ones[d]
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x
  }
}
""", [(2, 9, "error", "unknown element type 'f64'")])

# ---------------------------------------------------------------- types and shapes
case("shape_matmul_mismatch", """
model M(d: int = 8) {
  param w = ones[4, 4]
  fn forward(x: f32[B, S, d]) -> f32[B, S, 4] {
    return x @ w
  }
}
""", [(4, 14, "error", "matmul: contracted dimensions differ: f32[B, S, 8] @ f32[4, 4] (8 vs 4)")])

case("shape_broadcast", """
model M(d: int = 8) {
  param w = ones[4]
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return x + w
  }
}
""", [(4, 14, "error", "add: shapes [B, S, 8] and [4] do not broadcast")])

case("shape_reshape_count", """
model M(d: int = 8) {
  fn forward(x: f32[B, S, d]) -> f32[B, S, 3] {
    return reshape(x, [B, S, 3])
  }
}
""", [(3, 12, "error", "reshape: cannot reshape f32[B, S, 8] (8*B*S elements) to [B, S, 3] (3*B*S elements)")])

# A target whose element count overflows int64 (the message printed "-8 elements").
case("shape_reshape_overflow", """
model M(d: int = 8) {
  fn forward(x: f32[2, d]) -> f32[2, d] {
    let y = reshape(x, [9223372036854775807, 8])
    return x
  }
}
""", [(3, 13, "error", "reshape: cannot reshape f32[2, 8] to [9223372036854775807, 8]: it has more elements than an int64 "
       "counts")])

case("shape_layer_signature", """
import "nn"
model M(d: int = 8) {
  layer lin = Linear(16, 4)
  fn forward(x: f32[B, S, d]) -> f32[B, S, 4] {
    return lin(x)
  }
}
""", [(5, 16, "error", "argument 'x' of 'Linear.forward' has type f32[B, S, 8], but the signature says dimension 2 is 16"),
      ("stdlib/nn.hspmd", 9, 17, "note", "declared here")])

case("shape_return_type", """
model M(d: int = 8) {
  fn forward(x: f32[B, S, d]) -> f32[B, S, 4] {
    return x
  }
}
""", [(3, 12, "error", "the result of 'M.forward' has type f32[B, S, 8], but the signature says dimension 2 is 4"),
      (2, 34, "note", "declared here")])

case("shape_float_token_ids", """
model M(d: int = 8) {
  param table = normal[16, d](std = 0.02)
  fn forward(ids: f32[B, S]) -> f32[B, S, d] {
    return embedding(table, ids)
  }
}
""", [(4, 12, "error", "embedding: token ids must be integers, got f32[B, S]")])

case("shape_inexact_division", """
layer L(d: int, heads: int) {
  let hd = d / heads
}
model M(d: int = 10) {
  layer l = L(d, 3)
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x
  }
}
""", [(2, 14, "error", "10 / 3 is not a whole number")])

case("shape_attention_heads", """
model M(d: int = 8) {
  fn forward(q: f32[B, S, 4, 2], k: f32[B, S, 3, 2]) -> f32[B, S, 4, 2] {
    return attention(q, k, k, causal = false)
  }
}
""", [(3, 12, "error", "attention: query heads (4) must be a multiple of key/value heads (3)")])

case("shape_stack_index", """
import "nn"
model M(d: int = 8) {
  layer blocks = Linear(d, d) * 2
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return blocks[5](x)
  }
}
""", [(5, 19, "error", "index 5 is out of range for 'blocks' (2 layers)")])

case("shape_zero_dimension", """
model M(d: int = 0) {
  param w = ones[d]
  fn forward(x: f32[B]) -> f32[B] {
    return x
  }
}
""", [(2, 18, "error", "parameter dimensions must be positive, got 0")])

# The model's error once: its plan in the same file is not elaborated again to repeat it.
case("shape_error_of_a_model_with_its_plan", """
model M(d: int = 0) {
  param w = ones[d]
  fn forward(x: f32[B]) -> f32[B] {
    return x
  }
}
plan p for M {
  bind B = 8
}
""", [(2, 18, "error", "parameter dimensions must be positive, got 0")])

case("shape_float_for_int_parameter", """
import "nn"
model M(d: int = 4) {
  layer lin = Linear(4.5, d)
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return x
  }
}
""", [(3, 22, "error", "parameter 'din' must be an integer, got a float")])

case("shape_dimension_out_of_range", """
model M(d: int = 4) {
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    return softmax(x, dim = 5)
  }
}
""", [(3, 29, "error", "dimension 5 is out of range for a tensor of rank 3")])

case("shape_unpack_tensor", """
model M(d: int = 4) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let a, b = x
    return a
  }
}
""", [(3, 5, "error", "cannot unpack a tensor f32[B, 4] into 2 names")])

case("shape_symbolic_parameter", """
model M(d: int = 4) {
  fn forward(x: f32[B, d]) -> f32[B, d] {
    return x + ones_like
  }
}
""", [(3, 16, "error", "unknown name 'ones_like'")])

# ---------------------------------------------------------------- annotations
case("annotation_axis_counts", plan("  annotate wte = [0..4]: R*2 x S1*3"),
     [(5, 18, "error", "mesh axis counts 2 x 3 multiply to 6, but the group has 4 devices")])

case("annotation_device_in_two_subgroups", plan("  annotate wte = { [0, 1]: S0 | [1, 2]: S0 } dup"),
     [(5, 34, "error", "device 1 is listed twice (subgroups must be disjoint)")])

case("annotation_device_twice_in_group", plan("  annotate wte = [0, 0]: R"),
     [(5, 22, "error", "device 0 is listed twice in one device group")])

case("annotation_sizes_do_not_sum", plan("  annotate tokens = { [0]: R | [1]: R } split0 [5, 4]"),
     [(5, 41, "error", "sizes sum to 9, but dimension 0 has size 8 (for 'tokens' of type i32[8, 64])")])

case("annotation_sizes_count", plan("  annotate tokens = { [0]: R | [1]: R } split0 [4, 2, 2]"),
     [(5, 41, "error", "3 sizes given for 2 subgroups")])

case("annotation_unknown_axis", plan("  annotate wte = [0..4]: Q1"),
     [(5, 26, "error", "unknown mesh axis 'Q1'; expected S<dim>, R or P")])

case("annotation_split_dim_out_of_range", plan("  annotate lnf = [0, 1]: S1"),
     [(5, 26, "error", "split dimension 1 is out of range for a tensor of rank 1 (for 'lnf' of type f32[128])")])

case("annotation_missing_axis_count", plan("  annotate wte = [0..4]: R x S1*2"),
     [(5, 26, "error", "each mesh axis needs a count (as in 'S1*2') when a group has several axes")])

case("annotation_empty_range", plan("  annotate wte = [3..3]: R"),
     [(5, 19, "error", "empty device range 3..3 (the end is excluded)")])

case("annotation_unknown_placement", plan("  annotate wte = { [0]: R | [1]: R } spilt0"),
     [(5, 38, "error", "unknown placement 'spilt0'; expected dup, partial or split<dim>")])

case("annotation_sizes_on_dup", plan("  annotate wte = { [0]: R | [1]: R } dup [1, 2]"),
     [(5, 43, "error", "only a split placement takes sizes")])

# ---------------------------------------------------------------- plans
case("plan_unknown_model", """
plan p for Nope {
}
""", [(1, 12, "error", "unknown model 'Nope' (is its file imported?)")])

case("plan_bind_not_a_symbol", plan("  bind Q = 4"),
     [(5, 8, "error", "'Q' is not a symbolic dimension of GPT.forward (its symbols: B, S)")])

case("plan_annotate_matches_nothing", plan("  annotate blocks[*].wqkz = [0]: R"),
     [(5, 12, "error", "'blocks[*].wqkz' matches no parameter or input of GPT")])

case("plan_layers_out_of_range", plan("  pipeline a {\n    stage devices [0] layers blocks[0:9]\n  }"),
     [(6, 30, "error", "'blocks[0:9]' is out of range: 'blocks' has 4 layers")])

case("plan_cluster_missing", plan('  cluster "nope.toml"'),
     [(5, 11, "error", "cannot read cluster file 'tests/diagnostics/nope.toml'")])

# A folder where the cluster file is expected says so.
case("plan_cluster_directory", plan('  cluster "."'),
     [(5, 11, "error", "cannot read cluster file 'tests/diagnostics/': it is a directory")])

case("plan_unknown_schedule", plan("  schedule zigzag"),
     [(5, 12, "error", "unknown schedule 'zigzag'; expected 1f1b or gpipe")])

case("plan_unknown_precision", plan("  precision fp16"),
     [(5, 13, "error", "unknown precision 'fp16'; expected fp32 or bf16")])

case("plan_precision_twice", plan("  precision bf16\n  precision fp32"),
     [(6, 3, "error", "'precision' is given twice"), (5, 13, "note", "first given here")])

case("plan_unknown_optimizer", plan("  optimizer adam(lr = 1e-3)"),
     [(5, 13, "error", "unknown optimizer 'adam'; expected adamw or sgd")])

case("plan_stage_without_devices", plan("  pipeline a {\n    stage tp 2 layers blocks\n  }"),
     [(6, 5, "error", "a stage needs 'devices [...]'")])

case("plan_cluster_twice", plan('  cluster "../../examples/clusters/cpu4.toml"\n  cluster "x.toml"'),
     [(6, 3, "error", "'cluster' is given twice"), (5, 11, "note", "first given here")])

case("plan_unknown_model_parameter", """
import "nn"
plan p for GPT(layerz = 2) {
  bind B = 8, S = 64
}
""", [(2, 16, "error", "model 'GPT' has no parameter 'layerz'")])

case("plan_unbound_symbol", """
import "nn"
plan p for GPT {
  bind B = 8
}
""", [(2, 6, "error", "plan 'p' does not bind 'S', a symbolic dimension of GPT.forward (add `bind S = ...`)")])

case("plan_with_unknown_parameter", plan("  pipeline a {\n    stage devices [0] layers blocks with wtf\n  }"),
     [(6, 42, "error", "'wtf' names no parameter of GPT")])

case("plan_zero_microbatches", plan("  pipeline a microbatches 0 {\n    stage devices [0] layers blocks\n  }"),
     [(5, 27, "error", "'microbatches' must be a positive integer")])

case("plan_too_many_microbatches", plan("  pipeline a microbatches 4294967304 {\n    stage devices [0] layers blocks\n  }"),
     [(5, 27, "error", "'microbatches' is 4294967304; a pipeline has at most 1023 micro-batches")])

case("plan_device_id_too_large", plan("  pipeline a {\n    stage devices [0, 9223372036854775807] layers blocks\n  }"),
     [(6, 23, "error", "device id 9223372036854775807 is too large (ids are below 1048576)")])
case("plan_stack_not_a_stack", plan("  pipeline a {\n    stage devices [0] layers wte\n  }"),
     [(6, 30, "error", "'wte' is not a stack of layers of GPT")])

case("attention_without_causal", """
model M() {
  fn forward(q: f32[2, 4, 2, 8]) -> f32[] { return sum(attention(q, q, q)) }
}
""", [(2, 56, "error", "attention needs 'causal': true when each position may only see earlier ones (a language model), false when it sees all of them")])

case("plan_optimizer_out_of_range", plan("  optimizer adamw(lr = -1, beta1 = 7, eps = 0, weight_decay = -0.1)\n  pipeline a {\n    stage devices [0] layers blocks with wte, lnf\n  }"),
     [(5, 24, "error", "'lr' must be positive, got -1"),
      (5, 36, "error", "'beta1' must be at least 0 and below 1, got 7"),
      (5, 45, "error", "'eps' must be positive, got 0"),
      (5, 63, "error", "'weight_decay' must be at least 0, got -0.1")])

# An error inside the stdlib names the instance it is in, at the user's model.
case("stdlib_error_names_its_instance", """
import "nn"

model ParaGPT = GPT(vocab = 256, d = 48, heads = 5, layers = 2, ffn = 96)
""", [("stdlib/nn.hspmd", 76, 66, "error", "48 / 5 is not a whole number"),
      (3, 7, "note", "in blocks[0] of ParaGPT, instantiated here")])

# ---------------------------------------------------------------- checked arithmetic
case("overflow_divide", """
model M(m: int = -9223372036854775807 - 1) {
  param w = zeros[m / -1]
  fn forward(x: f32[4]) -> f32[] { return sum(x) }
}
""", [(2, 21, "error", "integer overflow: -9223372036854775808 / -1 does not fit in 64 bits")])
case("overflow_multiply", """
model M(d: int = 4294967297) {
  param w = zeros[d * d]
  fn forward(x: f32[4]) -> f32[] { return sum(x) }
}
""", [(2, 21, "error", "integer overflow: 4294967297 * 4294967297 does not fit in 64 bits")])
case("overflow_negate", """
model M(m: int = -9223372036854775807 - 1) {
  param w = zeros[-m]
  fn forward(x: f32[4]) -> f32[] { return sum(x) }
}
""", [(2, 19, "error", "integer overflow: -(-9223372036854775808) does not fit in 64 bits")])
case("tensor_too_large", """
model M(d: int = 2147483648) {
  param w = zeros[d, d]
  fn forward(x: f32[4]) -> f32[] { return sum(x) }
}
""", [(2, 9, "error", "parameter 'w' is too large: f32[2147483648, 2147483648] is more than 256 TiB")])
case("result_too_large", """
model M(d: int = 16777216) {
  param w = zeros[d]
  fn forward(x: f32[d]) -> f32[] {
    let outer = reshape(x, [d, 1]) @ reshape(w, [1, d])
    return sum(outer)
  }
}
""", [(4, 36, "error", "the result of matmul is too large: f32[16777216, 16777216] is more than 256 TiB")])


def main():
    # Written cases replace their files; hand-written cases beside them (stack_too_many_layers)
    # stay: remove a retired case's file by hand.
    for name, code, expects in CASES:
        lines = []
        for expect in expects:
            if len(expect) == 5:
                file, line, col, sev, msg = expect
                lines.append(f"// expect: {file}:{line}:{col}: {sev}: {msg}")
            else:
                line, col, sev, msg = expect
                lines.append((line, col, sev, msg))
        shift = len(lines)
        text = []
        for item in lines:
            if isinstance(item, tuple):
                line, col, sev, msg = item
                text.append(f"// expect: {line + shift}:{col}: {sev}: {msg}")
            else:
                text.append(item)
        with open(os.path.join(HERE, name + ".hspmd"), "w") as out:
            out.write("\n".join(text) + "\n" + code)
    print(f"wrote {len(CASES)} cases")


if __name__ == "__main__":
    main()
