#!/usr/bin/env python3
"""Writes the lint corpus: one broken plan per case, each starting with the diagnostics
`hspmc lint` must produce, as `// expect: LINE:COL: SEVERITY: MESSAGE [CODE]` lines. A message
ending in "..." is compared up to that point (for estimates whose digits are not the point).
Expectations are written here by hand; line numbers count from the first line of the plan
and are shifted past the expect lines when written. Run after editing:
python3 tests/lint/make_cases.py"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []
# Cases written by hand, which main() keeps (it removes the other cases no longer listed).
HAND_WRITTEN = {"hs120_zero_replicas_not_a_multiple.hspmd", "hs120_zero_replicas_one_copy.hspmd"}
CPU4 = '  cluster "../../examples/clusters/cpu4.toml"\n'


def case(name, text, expects):
    CASES.append((name, text.lstrip("\n"), expects))


def gpt(body, bind="  bind B = 8, S = 64\n", cluster=CPU4, model="GPT", args=""):
    # lines: 1 import, 2 blank, 3 plan, 4 cluster, 5 bind, body from line 6
    return f'import "nn"\n\nplan p for {model}{args} {{\n{cluster}{bind}{body}\n}}\n'


ONE = "  pipeline a {\n    stage devices [0] layers blocks with wte, lnf\n  }"

# ---------------------------------------------------------------- errors
case("hs101_stage_device", gpt("  pipeline a {\n    stage devices [0, 7] tp 2 layers blocks with wte, lnf\n  }"),
     [(7, 19, "error", "device 7 is not in the cluster (cpu4 has devices 0..3) [HS101]")])
case("hs102_cp_device_in_two_shares", gpt("  pipeline a {\n    stage devices [0, 1, 2] cp [0: 5, 1: 3, 0: 3] layers blocks with wte, lnf\n  }", bind="  bind B = 4, S = 66\n"),
     [(7, 45, "error", "device 0 is in two cp shares (the shares divide the stage's devices, each device into one) [HS102]")])
case("hs102_cp_outside_stage", gpt("  pipeline a {\n    stage devices [0, 1] cp [0: 1, 9: 1] layers blocks with wte, lnf\n  }"),
     [(7, 36, "error", "device 9 is not a device of this stage (cp shares divide the stage's devices) [HS102]")])
case("hs102_stage_device_twice", gpt("  pipeline a {\n    stage devices [0, 0] layers blocks with wte, lnf\n  }"),
     [(7, 19, "error", "device 0 is listed twice in this stage [HS102]")])
case("hs102_device_two_stages", gpt("  pipeline a microbatches 2 {\n    stage devices [0] layers blocks[0:2] with wte\n"
                                    "    stage devices [0] layers blocks[2:4] with lnf, wte\n  }"),
     [(8, 19, "error", "device 0 already runs stage 0 of this pipeline: a device runs one stage [HS102]")])
case("hs102_device_two_pipelines", gpt("  pipeline a {\n    stage devices [0, 1] layers blocks with wte, lnf\n  }\n"
                                       "  pipeline b {\n    stage devices [1] layers blocks with wte, lnf\n  }"),
     [(10, 19, "error", "device 1 already runs a stage of pipeline 'a': a device runs one stage [HS102]")])
case("hs101_annotation_device", gpt("  annotate wte = [0, 5]: S0"),
     [(6, 18, "error", "device 5 is not in the cluster (cpu4 has devices 0..3) [HS101]")])
case("hs102_device_twice", gpt("  annotate wte = { [0, 1]: S0 | [1, 2]: S0 } dup"),
     [(6, 34, "error", "device 1 is listed twice (subgroups must be disjoint) [HS102]")])
case("hs103_mesh_counts", gpt("  annotate wte = [0..4]: R*2 x S1*3"),
     [(6, 18, "error", "mesh axis counts 2 x 3 multiply to 6, but the group has 4 devices [HS103]")])
case("hs104_batch_split", gpt("  pipeline a {\n    stage devices [0, 1] layers blocks with wte, lnf\n  }",
                              bind="  bind B = 9, S = 64\n"),
     [(7, 19, "error", "2 devices do not divide dimension 0 (9) of 'tokens' (pieces of 5 or fewer; say `chunked` in the plan if that is intended) [HS104]"),
      (7, 19, "error", "2 devices do not divide dimension 0 (9) of 'targets' (pieces of 5 or fewer; say `chunked` in the plan if that is intended) [HS104]")])
case("hs104_raw_annotation", gpt("  annotate wte = [0, 1, 2]: S0"),
     [(6, 18, "error", "3 devices do not divide dimension 0 (256) of 'wte' (pieces of 86 or fewer; say `chunked` in the plan if that is intended) [HS104]"),
      ("stdlib/nn.hspmd", 76, 15, "warning", "the result of matmul at nn.hspmd:76:39 and 3 like it are resharded automatically from [0..3]: S2 to [0..3]: R (about ...")])
case("hs105_sizes_sum", gpt("  annotate tokens = { [0]: R | [1]: R } split0 [5, 4]"),
     [(6, 41, "error", "sizes sum to 9, but dimension 0 has size 8 (for 'tokens' of type i32[8, 64]) [HS105]")])
case("hs105_sizes_count", gpt("  annotate tokens = { [0]: R | [1]: R } split0 [4, 2, 2]"),
     [(6, 41, "error", "3 sizes given for 2 subgroups [HS105]")])
case("hs106_heads_sum", gpt("  pipeline a {\n    stage devices [0, 1] hp [0: 3, 1: 2] layers blocks with wte, lnf\n  }"),
     [(7, 26, "error", "hp head counts sum to 5, but attention has 4 heads [HS106]"),
      (3, 6, "warning", "estimated compute per step differs by ..."),
      ("stdlib/nn.hspmd", 78, 13, "warning", "'blocks[0].forward.k' and 7 like it are resharded automatically from ...")])
case("hs119_tp_heads", gpt("  pipeline a {\n    stage devices [0, 1, 2, 3] tp 4 layers blocks with wte, lnf\n  }",
                           args="(d = 48, heads = 6)"),
     [(7, 35, "error", "tp 4 does not divide the 6 heads of attention: tensor parallelism splits attention by heads; use a tp that divides 6 [HS119]"),
      ("stdlib/nn.hspmd", 78, 13, "note", "the attention is here"),
      ("stdlib/nn.hspmd", 76, 15, "warning", "the result of matmul at nn.hspmd:76:39 and 3 like it are resharded automatically from [0..4]: S2 to [0..4]: R (about ...")])
case("hs119_tp_kv_heads", gpt("  pipeline a {\n    stage devices [0, 1, 2, 3] tp 4 layers blocks with embed, norm, head\n  }",
                              model="LLaMA", args="(kv_heads = 2)"),
     [(7, 35, "error", "tp 4 does not divide the 2 key/value heads of attention: tensor parallelism splits attention by heads; use a tp that divides 2 [HS119]"),
      ("stdlib/nn.hspmd", 59, 13, "note", "the attention is here"),
      ("stdlib/nn.hspmd", 57, 13, "warning", "the result of matmul at nn.hspmd:57:23 and 3 like it are resharded automatically from [0..4]: S2 to [0..4]: R (about ..."),
      ("stdlib/nn.hspmd", 58, 13, "warning", "the result of matmul at nn.hspmd:58:23 and 3 like it are resharded automatically from [0..4]: S2 to [0..4]: R (about ...")])
case("hs104_second_pipeline", gpt("  pipeline a {\n    stage devices [0] layers blocks with wte, lnf\n  }\n"
                                  "  pipeline b {\n    stage devices [1, 2] layers blocks with wte, lnf\n  }",
                                  bind="  bind B = 6, S = 64\n"),
     [(10, 19, "error", "2 devices do not divide dimension 0 of 'tokens' where their subgroup holds 3 of its 6 (pieces of 2 or fewer; say `chunked` in the plan if that is intended) [HS104]"),
      (10, 19, "error", "2 devices do not divide dimension 0 of 'targets' where their subgroup holds 3 of its 6 (pieces of 2 or fewer; say `chunked` in the plan if that is intended) [HS104]"),
      (3, 6, "warning", "estimated compute per step differs by 100% across devices: slowest device 0 (cpu, ...")])
case("hs205_kv_groups", gpt("  pipeline a {\n    stage devices [0, 1] hp [0: 3, 1: 1] layers blocks with embed, norm, head\n  }",
                            model="LLaMA", args="(kv_heads = 2)"),
     [(7, 30, "warning", "3 heads break the key/value groups: 4 query heads share 2 key/value heads; with shares that are not multiples of 2 every device gathers all keys and values [HS205]"),
      (3, 6, "warning", "estimated compute per step differs by ..."),
      ("stdlib/nn.hspmd", 59, 13, "warning", "'blocks[0].attn.forward.k' and 7 like it are resharded automatically from ...")])
case("hs107_layers_missing", gpt("  pipeline a {\n    stage devices [0] layers blocks[0:3] with wte, lnf\n  }"),
     [(6, 3, "error", "layer 3 of blocks is not placed in pipeline 'a' [HS107]")])
case("hs107_stage_without_layers", gpt("  pipeline a {\n    stage devices [0, 1] tp 2 with wte, lnf\n  }"),
     [(6, 3, "error", "layers blocks[0:4] are not placed in pipeline 'a' [HS107]")])
case("hs107_layers_gap", gpt("  pipeline a microbatches 2 {\n    stage devices [0] layers blocks[0:1] with wte\n    stage devices [1] layers blocks[3:4] with lnf, wte\n  }"),
     [(8, 30, "error", "layers blocks[1:3] are not placed in pipeline 'a' [HS107]")])
case("hs107_layers_repeated", gpt("  pipeline a microbatches 2 {\n    stage devices [0] layers blocks[0:2] with wte\n    stage devices [1] layers blocks[1:4] with lnf, wte\n  }"),
     [(8, 30, "error", "layer 1 of blocks is placed twice in pipeline 'a' (stages 0 and 1) [HS107]")])
case("hs107_layers_out_of_order", gpt("  pipeline a microbatches 2 {\n    stage devices [0] layers blocks[2:4] with wte\n    stage devices [1] layers blocks[0:2] with lnf, wte\n  }"),
     [(8, 30, "error", "stage 1 of pipeline 'a' runs blocks[0:2] after an earlier stage ran later layers [HS107]")])
case("hs107_parameter_not_placed", gpt("  pipeline a {\n    stage devices [0] layers blocks with wte\n  }"),
     [(6, 3, "error", "parameter 'lnf' is not placed in pipeline 'a' (add `with lnf` to the stages that use it) [HS107]")])
case("hs108_tp_divides", gpt("  pipeline a {\n    stage devices [0, 1, 2] tp 2 layers blocks with wte, lnf\n  }"),
     [(7, 32, "error", "tp 2 does not divide the stage's 3 devices [HS108]")])
case("hs108_tp_on_one_device", gpt("  pipeline a {\n    stage devices [0] tp 2 layers blocks with wte, lnf\n  }"),
     [(7, 26, "error", "tp 2 does not divide the stage's 1 device [HS108]")])
case("hs109_annotation_off_stage", gpt("  pipeline a {\n    stage devices [0, 1] tp 2 layers blocks with wte, lnf\n  }\n  annotate blocks[0].wqkv = [2, 3]: S1"),
     [(9, 29, "error", "'blocks[0].wqkv' is annotated on devices other than those of the stages that hold it [HS109]"),
      ("stdlib/nn.hspmd", 76, 39, "warning", "'blocks[0].wqkv' is resharded automatically from [2, 3]: S1 to [0, 1]: S1 (about ...")])
case("hs110_microbatches", gpt("  pipeline a microbatches 3 {\n    stage devices [0] layers blocks with wte, lnf\n  }"),
     [(6, 27, "error", "3 micro-batches do not divide pipeline 'a''s batch of 8 [HS110]")])
case("hs110_after_shares", gpt("  pipeline a share 3 microbatches 2 {\n    stage devices [0] layers blocks with wte, lnf\n  }\n  pipeline b share 1 microbatches 2 {\n    stage devices [1] layers blocks with wte, lnf\n  }",
                               bind="  bind B = 6, S = 64\n"),
     [(6, 35, "error", "2 micro-batches do not divide pipeline 'a''s batch of 5 [HS110]"),
      (9, 35, "error", "2 micro-batches do not divide pipeline 'b''s batch of 1 [HS110]"),
      (3, 6, "warning", "estimated compute per step differs by ...")])
case("hs111_memory", gpt(ONE, cluster='  cluster "tiny_memory.toml"\n'),
     [(7, 19, "error", "device 0 needs ...")])
# bf16 on a GPU of 1 GiB: the program fits, the bf16 copies of its 16 product weights (4 x
# wqkv, wo, w1, w2: 1.5 MiB; the head reads wte through its transpose, which the backward
# reads too: a buffer of its own, not a parameter) do not, beside the 1 GiB a GPU run keeps free.
case("hs206_bf16_copies", gpt("  precision bf16\n" + ONE, cluster='  cluster "tiny_gpu.toml"\n'),
     [(8, 19, "warning", "device 0's bf16 copies of 16 of the 16 parameters its bf16 products read (1.5 MiB) do not fit on a tinygpu (1.00 GiB) beside the memory plan of its training program (...")])
case("hs112_empty_pipeline", gpt("  pipeline a {\n    stage devices [0] layers blocks with wte, lnf\n  }\n  pipeline b {\n    stage devices [1] layers blocks with wte, lnf\n  }\n  pipeline c {\n    stage devices [2] layers blocks with wte, lnf\n  }",
                                 bind="  bind B = 2, S = 64\n"),
     [(12, 3, "error", "pipeline 'c' gets no samples of the batch of 2 [HS112]"),
      (3, 6, "warning", "estimated compute per step differs by ...")])
case("hs113_cp_two_pipelines", gpt("  pipeline a {\n    stage devices [0, 1] cp [0: 1, 1: 1] layers blocks with wte, lnf\n  }\n  pipeline b {\n    stage devices [2] layers blocks with wte, lnf\n  }"),
     [(7, 5, "error", "cp and hp shares need a plan with a single pipeline (the notation has one hetero level) [HS113]")])
case("hs114_cp_hp_groups", gpt("  pipeline a {\n    stage devices [0, 1, 2] cp [0: 1, 1: 1, 2: 1] hp [0: 2, 1: 2] layers blocks with wte, lnf\n  }"),
     [(7, 5, "error", "cp and hp list different device groups [HS114]")])
case("hs115_annotated_twice", gpt("  annotate wte = [0, 1]: S0\n  annotate wte = [0, 1]: S1"),
     [(7, 18, "error", "'wte' is annotated twice, differently [HS115]"), (6, 18, "note", "first annotated here")])
case("hs116_split_dimension", gpt("  annotate lnf = [0, 1]: S1"),
     [(6, 26, "error", "split dimension 1 is out of range for a tensor of rank 1 (for 'lnf' of type f32[128]) [HS116]")])
case("hs118_partial_parameter", gpt("  annotate wte = [0, 1]: P"),
     [(6, 18, "error", "'wte' is a parameter: it cannot hold partial sums (use R to copy it or S to split it) [HS118]")])
case("hs118_partial_input", gpt("  annotate tokens = [0, 1]: P"),
     [(6, 21, "error", "'tokens' is a model input: it cannot hold partial sums (use R to copy it or S to split it) [HS118]")])
case("hs101_reshard_device", gpt("  reshard blocks[1].forward.h to [0, 4]: S1"),
     [(6, 34, "error", "device 4 is not in the cluster (cpu4 has devices 0..3) [HS101]")])

# ---------------------------------------------------------------- warnings
case("hs200_no_cluster", gpt(ONE, cluster=""),
     [(3, 6, "warning", "no cluster file: device, memory, balance and link checks are skipped [HS200]")])
case("hs201_few_microbatches", gpt("  pipeline a microbatches 1 {\n    stage devices [0] layers blocks[0:2] with wte\n    stage devices [1] layers blocks[2:4] with lnf, wte\n  }"),
     [(6, 27, "warning", "pipeline 'a' has 2 stages but 1 micro-batch: some stages idle for most of each step [HS201]")])
case("hs202_imbalance", gpt("  pipeline a microbatches 2 {\n    stage devices [0] layers blocks[0:3] with wte\n    stage devices [1] layers blocks[3:4] with lnf, wte\n  }"),
     [(3, 6, "warning", "estimated compute per step differs by ...")])
case("hs203_slower_link", gpt("  pipeline a microbatches 2 {\n    stage devices [0, 2] tp 2 layers blocks[0:2] with wte\n    stage devices [3, 1] tp 2 layers blocks[2:4] with lnf, wte\n  }",
                              cluster='  cluster "two_nodes.toml"\n'),
     [(8, 19, "warning", "the hop from stage 0 to stage 1 of pipeline 'a' sends 2 of 2 device pairs over the network; listing this stage's devices in another order needs only 0 [HS203]")])
case("hs204_automatic_reshard", gpt("  annotate wte = [0, 1]: S1\n  annotate tokens = [0, 1]: R"),
     [("stdlib/nn.hspmd", 76, 23, "warning", "the result of embedding at nn.hspmd:103:20 is resharded automatically from [0, 1]: S2 to [0, 1]: R (about ...")])


def main():
    written = {name + ".hspmd" for name, _, _ in CASES}
    for old in os.listdir(HERE):
        if old.endswith(".hspmd") and old not in written and old not in HAND_WRITTEN:
            os.remove(os.path.join(HERE, old))
    for name, code, expects in CASES:
        shift = len(expects)
        lines = []
        for e in expects:
            if len(e) == 5:
                lines.append(f"// expect: {e[0]}:{e[1]}:{e[2]}: {e[3]}: {e[4]}")
            else:
                lines.append(f"// expect: {e[0] + shift}:{e[1]}: {e[2]}: {e[3]}")
        # the cluster path is relative to the plan file, which lives here
        with open(os.path.join(HERE, name + ".hspmd"), "w") as out:
            out.write("\n".join(lines) + "\n" + code)
    print(f"wrote {len(CASES)} cases")


if __name__ == "__main__":
    main()
