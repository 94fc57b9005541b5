// Compilation.cpp - loading files and their imports, the module table, model elaboration and `hspmc
// check` (frontend/Compilation.h).
#include "frontend/Compilation.h"

#include "frontend/ElaboratorImpl.h"
#include "frontend/Parser.h"
#include "ir/Files.h"

#include <cstdlib>
#include <filesystem>
#include <set>

#ifndef HSPMD_STDLIB_DIR
#define HSPMD_STDLIB_DIR "stdlib"
#endif

namespace hspmd::frontend {

namespace fs = std::filesystem;

std::string defaultStdlibDir() {
  if (const char *env = std::getenv("HSPMD_STDLIB"); env && *env)
    return env;
  return HSPMD_STDLIB_DIR;
}

// One key per file, however it was reached: ../a.hspmd, an absolute path, a symlink.
static std::string fileKey(const std::string &path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? fs::path(path).lexically_normal().string() : canonical.string();
}

Compilation::Compilation(SourceManager &sources, DiagnosticEngine &diags, std::string stdlibDir)
    : sources_(sources), diags_(diags), stdlibDir_(std::move(stdlibDir)) {}

Compilation::~Compilation() = default;

const FileAst *Compilation::load(const std::string &path) {
  return loadAt(path, 0);
}

const FileAst *Compilation::loadText(const std::string &name, std::string text) {
  const std::string &stored = sources_.addBuffer(name, std::move(text));
  auto ast = parseFile(name, stored, diags_);
  if (!ast)
    return nullptr;
  loaded_[fileKey(name)] = ast.get();
  return addFile(std::move(ast), 0);
}

const FileAst *Compilation::loadAt(const std::string &path, int depth, const ImportDecl *from) {
  const std::string key = fileKey(path);
  if (auto it = loaded_.find(key); it != loaded_.end())
    return it->second; // imported twice, or an import cycle: once is enough
  // One check of the file, its error at the import line that names it (which the user must
  // change) or, for a file the command names, at the file.
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  const std::string why = folder ? "it is a directory" : ir::notAFile(path);
  const std::string *text = why.empty() ? sources_.load(path) : nullptr;
  if (!text) {
    if (from)
      diags_.error(from->loc,
                   "cannot read import \"" + from->path + "\" (" + path + ")" + (why.empty() ? "" : ": " + why));
    else if (folder)
      diags_.error(ir::Location{path, 0, 0, 1}, "'" + path + "' is a directory, not a .hspmd file");
    else
      diags_.error(ir::Location{path, 0, 0, 1}, "cannot read '" + path + "'" + (why.empty() ? "" : ": " + why));
    return nullptr;
  }
  auto ast = parseFile(path, *text, diags_);
  if (!ast)
    return nullptr;
  loaded_[key] = ast.get();
  return addFile(std::move(ast), depth);
}

const FileAst *Compilation::addFile(std::unique_ptr<FileAst> file, int depth) {
  const FileAst *ast = file.get();
  files_.push_back(std::move(file));
  bool ok = true;
  for (const ImportDecl &import : ast->imports) {
    std::string name = import.path;
    if (fs::path(name).extension() != ".hspmd")
      name += ".hspmd";
    fs::path local = fs::path(ast->fileName).parent_path() / name;
    fs::path fromStdlib = fs::path(stdlibDir_) / name;
    std::error_code ec;
    fs::path chosen = fs::exists(local, ec) ? local : fs::exists(fromStdlib, ec) ? fromStdlib : fs::path();
    if (chosen.empty()) {
      diags_.error(import.loc, "cannot find import \"" + import.path + "\" (looked for " +
                                   local.lexically_normal().string() + " and " +
                                   fromStdlib.lexically_normal().string() + ")");
      ok = false;
      continue;
    }
    if (depth > 32) {
      diags_.error(import.loc, "imports nest deeper than 32 files");
      return nullptr;
    }
    // Name files relative to the working folder where possible: diagnostics and IR
    // locations then read "stdlib/nn.hspmd:12:3" rather than an absolute path.
    fs::path shown = chosen.is_absolute() ? chosen.lexically_proximate(fs::current_path(ec)) : chosen;
    if (shown.empty() || *shown.begin() == "..")
      shown = chosen;
    ok &= loadAt(shown.lexically_normal().string(), depth + 1, &import) != nullptr;
  }
  for (const auto &module : ast->modules) {
    auto [it, inserted] = modules_.emplace(module->name, module.get());
    if (!inserted) {
      diags_.error(module->loc, "'" + module->name + "' is already defined")
          .note(it->second->loc, "first defined here");
      ok = false;
    } else if (Elaborator::isBuiltin(module->name)) {
      diags_.error(module->loc, "'" + module->name + "' is the name of a built-in function");
      ok = false;
    }
  }
  return ok ? ast : nullptr;
}

const ModuleDecl *Compilation::findModule(const std::string &name) const {
  auto it = modules_.find(name);
  return it == modules_.end() ? nullptr : it->second;
}

std::vector<std::string> Compilation::moduleNames() const {
  std::vector<std::string> names;
  for (const auto &[name, module] : modules_)
    names.push_back(name);
  return names;
}

std::unique_ptr<ir::Graph> Compilation::elaborate(const ModuleDecl &model, const std::vector<Arg> &overrides,
                                                  const std::map<std::string, int64_t> &bindings,
                                                  const Location &instantiatedAt) {
  auto graph = std::make_unique<ir::Graph>(model.name);
  Elaborator elaborator(*this, *graph);
  std::vector<ArgValue> args;
  Scope empty;
  try {
    args = elaborator.evalArgs(overrides, empty);
  } catch (const ElaborationAbort &) {
    return nullptr;
  }
  if (!elaborator.elaborateModel(model, args, bindings, instantiatedAt.isKnown() ? instantiatedAt : model.loc))
    return nullptr;
  // A graph built by the elaborator that fails the verifier is a compiler bug; report it
  // as one rather than crash later.
  bool ok = ir::verifyGraph(*graph, [&](const ir::Location &loc, const std::string &message) {
    diags_.error(loc, "internal error: elaboration produced an invalid graph: " + message);
  });
  return ok ? std::move(graph) : nullptr;
}

bool Compilation::checkFile(const FileAst &file) {
  const int before = diags_.errorCount();
  std::set<std::string> failed; // models of this file that did not elaborate
  for (const auto &module : file.modules) {
    if (!module->isModel)
      continue;
    if (!module->isAlias()) {
      const ModuleParam *missing = nullptr;
      for (const ModuleParam &param : module->params)
        if (!param.defaultValue && !missing)
          missing = &param;
      if (missing) {
        diags_.error(missing->loc, "model parameter '" + missing->name + "' needs a default value");
        continue;
      }
    }
    const int errors = diags_.errorCount();
    if (!elaborate(*module) || diags_.errorCount() > errors)
      failed.insert(module->name);
  }
  // A plan of such a model as it is would report the model's errors again, at the plan.
  for (const auto &plan : file.plans)
    if (!plan->modelArgs.empty() || !failed.count(plan->model))
      elaboratePlan(*plan);
  return diags_.errorCount() == before;
}

} // namespace hspmd::frontend
