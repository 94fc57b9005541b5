// Compilation.h - the frontend's entry point: loads .hspmd files with their imports, and
// elaborates models into ir::Graph and plans into ir::PlanSpec.
//
//   SourceManager sources; CollectingSink sink; DiagnosticEngine diags(sink);
//   Compilation compilation(sources, diags);
//   const FileAst *file = compilation.load("examples/gpt/tiny_gpt.hspmd");
//   auto graph = compilation.elaborate(*compilation.findModule("TinyGPT"));
#pragma once

#include "frontend/Ast.h"
#include "frontend/Diagnostics.h"
#include "ir/Graph.h"
#include "ir/Plan.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hspmd::frontend {

/// $HSPMD_STDLIB when set, else the stdlib folder of the source tree hspmc was built from.
std::string defaultStdlibDir();

class Compilation {
public:
  Compilation(SourceManager &sources, DiagnosticEngine &diags, std::string stdlibDir = defaultStdlibDir());
  ~Compilation();

  /// Loads a file and, recursively, its imports (`import "nn"` looks for nn.hspmd next to
  /// the importing file, then in the stdlib). Returns null after reporting errors.
  const FileAst *load(const std::string &path);
  /// Parses text under a name (tests); imports resolve against the current folder.
  const FileAst *loadText(const std::string &name, std::string text);

  const ModuleDecl *findModule(const std::string &name) const;
  /// The names of every module and model loaded so far.
  std::vector<std::string> moduleNames() const;

  /// Elaborates a model. `overrides` replace parameter defaults (a plan's `for GPT(...)`);
  /// `bindings` give values to symbolic dimensions. An error in another file than
  /// `instantiatedAt`'s (the plan's `for GPT(...)`; by default the model's declaration) gets a
  /// note there naming the instance it is in. Returns null after reporting errors.
  std::unique_ptr<ir::Graph> elaborate(const ModuleDecl &model, const std::vector<Arg> &overrides = {},
                                       const std::map<std::string, int64_t> &bindings = {},
                                       const Location &instantiatedAt = {});

  struct ElaboratedPlan {
    ir::PlanSpec spec;
    std::unique_ptr<ir::Graph> graph; // the model under the plan's arguments and bindings,
                                      // with the plan's `annotate` lines attached (plan 0)
  };
  /// Elaborates a plan against the loaded modules. Returns nullopt after reporting errors.
  std::optional<ElaboratedPlan> elaboratePlan(const PlanDecl &plan);
  /// What elaboratePlan makes of a plan file, made from a PlanSpec in memory (the planner's
  /// candidates): the model under the spec's arguments and bindings, its `annotate` lines
  /// attached (plan 0). The model's file must be loaded. Null after reporting errors.
  std::unique_ptr<ir::Graph> elaborateSpec(const ir::PlanSpec &spec);

  /// `hspmc check`: elaborates every model (with its defaults) and every plan of the file.
  bool checkFile(const FileAst &file);

  SourceManager &sources() { return sources_; }
  DiagnosticEngine &diags() { return diags_; }
  const std::string &stdlibDir() const { return stdlibDir_; }

private:
  SourceManager &sources_;
  DiagnosticEngine &diags_;
  std::string stdlibDir_;
  std::vector<std::unique_ptr<FileAst>> files_;
  std::map<std::string, const FileAst *> loaded_; // by normalized path
  std::map<std::string, const ModuleDecl *> modules_;

  const FileAst *addFile(std::unique_ptr<FileAst> file, int depth);
  /// `from`: the import that names the file, where its errors are reported (null: a file the
  /// command names).
  const FileAst *loadAt(const std::string &path, int depth, const ImportDecl *from = nullptr);
};

} // namespace hspmd::frontend
