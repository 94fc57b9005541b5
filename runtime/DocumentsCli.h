// DocumentsCli.h - the --documents options of hspmc train and of generated binaries (one
// definition for both; docs/mixed-lengths.md).
#pragma once

#include "runtime/Run.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace hspmd::runtime {

struct DocumentFlags {
  bool documents = false;
  int64_t eod = 0, tokens = 0;
  std::string layout = "packed";
  std::string granularity = "step";
  std::string schedule = "balanced";

  /// Sets the run's document options from the flags parsed.
  void applyTo(RunOptions &run) const {
    run.documents = documents;
    run.documentOptions.eod = static_cast<int32_t>(eod);
    run.documentOptions.tokens = tokens;
    run.documentOptions.layout = layout == "padded" ? DocumentLayout::Padded : DocumentLayout::Packed;
    run.documentOptions.perMicroBatch = granularity == "micro-batch";
    run.documentOptions.schedule = schedule == "in-order" ? DocumentSchedule::InOrder : DocumentSchedule::Balanced;
  }
};

inline void addDocumentFlags(CLI::App &app, DocumentFlags &flags) {
  auto *documents = app.add_flag(
      "--documents", flags.documents,
      "Read --data as documents (.jsonl \"text\" fields, plain text separated by blank lines, or token files "
      "ending each with --eod); a step takes whole documents, attention is masked to each, only real tokens are "
      "scored (docs/mixed-lengths.md)");
  app.add_option("--tokens", flags.tokens, "With --documents: real tokens per step at most (default B x S)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->needs(documents);
  app.add_option("--layout", flags.layout,
                 "With --documents: packed (several per sequence) or padded (one per sequence)")
      ->check(CLI::IsMember({"packed", "padded"}))
      ->needs(documents);
  app.add_option("--granularity", flags.granularity,
                 "With a plan set: step (each step under the plan of its longest document) or micro-batch (each "
                 "document's batch under the plan of its length, several plans within a step)")
      ->check(CLI::IsMember({"step", "micro-batch"}))
      ->needs(documents);
  app.add_option("--schedule", flags.schedule,
                 "With --documents: balanced (a step's documents spread over the plan's pipelines and micro-batches "
                 "by estimated work, in as few micro-batches as hold them) or in-order (rows in corpus order)")
      ->check(CLI::IsMember({"balanced", "in-order"}))
      ->needs(documents);
  app.add_option("--eod", flags.eod, "With --documents: the end-of-document token (default 0: NUL in text)")
      ->check(CLI::Range(int64_t{0}, int64_t{INT32_MAX}))
      ->needs(documents);
}

} // namespace hspmd::runtime
