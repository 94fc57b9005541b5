// Training runs on the threads backend: every example plan of the tiny GPT and the tiny
// LLaMA gives, step for step, the losses of the same model on one device (same seed, same
// data), within 1e-4 relative; checkpoints continue under another plan; bad input fails
// with a clear error.
#include "../support/ExampleBuild.h"
#include "../support/Heavy.h"
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Fusion.h"
#include "runtime/ParameterStore.h"
#include "runtime/Run.h"
#include "runtime/Switch.h"
#include "runtime/gpu/NcclRun.h"

#include <boost/crc.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace hspmd;

namespace {

const char *const kData = "examples/data/gpl-3.txt";

int steps() {
  const char *env = std::getenv("HSPMD_TRAIN_STEPS");
  return env ? std::atoi(env) : 20;
}

struct Compiled : hspmd::testing::ExampleBuild {
  passes::PipelineResult result;
  runtime::ModelInfo model;
};

std::unique_ptr<Compiled> compile(const std::string &planPath, std::optional<bool> bf16 = std::nullopt) {
  auto c = std::make_unique<Compiled>();
  c->build = driver::elaborateBuild(c->compilation, planPath, {planPath}, "");
  EXPECT_TRUE(c->build) << planPath << ": " << (c->sink.diagnostics.empty() ? "" : c->sink.diagnostics[0].message);
  if (!c->build)
    return c;
  passes::PipelineOptions options;
  options.train = true;
  options.bf16 = bf16;
  c->result = passes::runPipeline(*c->build->graph, c->build->plans, options, [&](const passes::Problem &p) {
    ADD_FAILURE() << planPath << ": " << p.code << " " << p.message;
  });
  c->model = driver::modelInfo(*c->build->graph);
  return c;
}

std::vector<double> train(const Compiled &c, runtime::RunOptions options) {
  options.data = kData;
  return runtime::runThreads(c.result.programs.at(0), c.model, options).losses;
}

// The same model, bindings and optimizer on device 0 alone.
std::string referencePlan(const Compiled &c, const std::string &modelFile, const std::string &modelName) {
  const ir::PlanSpec &spec = c.build->plans[0];
  std::set<std::string> with;
  for (const auto &p : c.model.params)
    if (p.name.rfind("blocks[", 0) != 0)
      with.insert(p.name.substr(0, p.name.find('.')));
  std::string text = "import \"" + std::filesystem::absolute(modelFile).string() + "\"\nplan reference for " +
                     modelName + " {\n  bind ";
  bool first = true;
  for (const auto &[name, value] : spec.bindings) {
    text += (first ? "" : ", ") + name + " = " + std::to_string(value);
    first = false;
  }
  text += "\n  optimizer " + spec.optimizer + "(";
  first = true;
  for (const auto &[name, value] : spec.optimizerArgs) {
    text += (first ? "" : ", ") + name + " = " + std::to_string(value);
    first = false;
  }
  text += ")\n  pipeline main {\n    stage devices [0] layers blocks with ";
  first = true;
  for (const auto &name : with) {
    text += (first ? "" : ", ") + name;
    first = false;
  }
  text += "\n  }\n}\n";
  const auto path = std::filesystem::temp_directory_path() /
                    ("hspmd_reference_" + modelName + "_" + spec.name + "_" + std::to_string(::getpid()) + ".hspmd");
  std::ofstream(path) << text;
  return path.string();
}

void expectSameLosses(const std::vector<double> &got, const std::vector<double> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::getenv("HSPMD_SHOW_LOSSES"))
      std::printf("%s step %zu: %.9f vs %.9f (%.2e)\n", what.c_str(), i + 1, got[i], want[i],
                  std::abs(got[i] - want[i]) / std::abs(want[i]));
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-4 * std::abs(want[i]))
        << what << ": step " << i + 1 << " loss " << got[i] << ", one device " << want[i];
  }
}

struct Case {
  const char *plan, *modelFile, *modelName;
};

class PlanTraining : public ::testing::TestWithParam<Case> {};

TEST_P(PlanTraining, LossesMatchOneDevice) {
  const Case &c = GetParam();
  auto planned = compile(c.plan);
  ASSERT_TRUE(planned->result.ok);
  const std::string reference = referencePlan(*planned, c.modelFile, c.modelName);
  auto single = compile(reference);
  std::filesystem::remove(reference);
  ASSERT_TRUE(single->result.ok);
  ASSERT_EQ(single->result.programs[0].size(), 1u);
  runtime::RunOptions options;
  options.steps = steps();
  options.seed = 7;
  const auto losses = train(*planned, options);
  const auto want = train(*single, options);
  expectSameLosses(losses, want, c.plan);
  EXPECT_LT(losses.back(), losses.front() - 0.1) << "the loss falls";
}

INSTANTIATE_TEST_SUITE_P(
    Examples, PlanTraining,
    ::testing::Values(
        Case{"examples/gpt/plans/tp2.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/dp2_tp2.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/pipeline2.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/pipeline2_recompute.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/hetero4.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/hetero4_tied.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/cp_asym.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/hp_asym.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/hp_tp2.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/gpt/plans/dp2_zero.hspmd", "examples/gpt/tiny_gpt.hspmd", "TinyGPT"},
        Case{"examples/llama/plans/tiny_llama_dp2_tp2.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_pipeline2.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_hetero4.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_cp_asym.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_hp_asym.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_dp2_zero.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_dp2_tp2_zero.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"},
        Case{"examples/llama/plans/tiny_llama_hp_zero_heads.hspmd", "examples/llama/tiny_llama.hspmd", "TinyLLaMA"}),
    [](const ::testing::TestParamInfo<Case> &param) {
      std::string name = std::filesystem::path(param.param.plan).stem().string();
      for (char &ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return name;
    });

// A checkpoint saved under one plan continues under another as if uninterrupted.
TEST(Training, CheckpointContinuesUnderAnotherPlan) {
  auto hetero = compile("examples/gpt/plans/hetero4.hspmd");
  auto pipeline = compile("examples/gpt/plans/pipeline2.hspmd");
  ASSERT_TRUE(hetero->result.ok && pipeline->result.ok);
  const auto path = std::filesystem::temp_directory_path() / ("hspmd_ckpt_" + std::to_string(::getpid()));
  runtime::RunOptions options;
  options.steps = 8;
  const auto whole = train(*hetero, options);
  options.steps = 4;
  options.save = path.string();
  const auto first = train(*hetero, options);
  options.save.clear();
  options.load = path.string();
  const auto second = train(*pipeline, options);
  std::filesystem::remove(path);
  std::vector<double> joined = first;
  joined.insert(joined.end(), second.begin(), second.end());
  expectSameLosses(joined, whole, "hetero4 for 4 steps, then pipeline2 from its checkpoint");
}

// A switch that fails leaves the run on the plan before it: with --save, every device's state
// after the step before the switch is saved, the same bits as a run that stopped there. (The
// failure: one message of the move given to device 2, which held nothing under dp2_zero.) The
// same when the move goes in buckets by layer.
TEST(Training, AFailedSwitchKeepsTheOldStateAndSavesIt) {
  auto zero = compile("examples/gpt/plans/dp2_zero.hspmd");
  auto hetero = compile("examples/gpt/plans/hetero4.hspmd");
  ASSERT_TRUE(zero->result.ok && hetero->result.ok);
  const auto dir = std::filesystem::temp_directory_path();
  const std::string stopped = (dir / ("hspmd_stopped_" + std::to_string(::getpid()))).string(),
                    failed = (dir / ("hspmd_failed_" + std::to_string(::getpid()))).string();
  runtime::RunOptions options;
  options.data = kData;
  options.steps = 2;
  options.save = stopped;
  runtime::runThreads(zero->result.programs.at(0), zero->model, options);

  for (bool byLayer : {false, true}) { // in buckets, the old state is packed out of its arena first
    runtime::StateSwitch broken = runtime::planSwitch(zero->result.programs.at(0), hetero->result.programs.at(0), {},
                                                      runtime::OwnerChoice::Links, byLayer);
    ASSERT_FALSE(broken.messages.empty());
    broken.messages.front().from = 2;
    runtime::RunPlans plans{{&zero->result.programs.at(0), &hetero->result.programs.at(0)}, {}, {}, {}};
    plans.switches.push_back(runtime::PlanSwitch{3, 1, &broken, "switched"});
    options.steps = 4;
    options.save = failed;
    try {
      runtime::runThreads(plans, zero->model, options);
      ADD_FAILURE() << "the broken switch ran";
    } catch (const runtime::RunError &e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("the switch before step 3 failed: device 2 was to send part of '", 0), 0u) << what;
      EXPECT_NE(what.find("; the run stopped on the plan before it, after step 2, its state saved to " + failed +
                          " (--load it to go on)"),
                std::string::npos)
          << what;
    }
    const std::string fingerprint = runtime::ParameterStore::fingerprint(zero->model.name, zero->model.params);
    const runtime::ParameterStore want = runtime::ParameterStore::load(stopped, fingerprint),
                                  got = runtime::ParameterStore::load(failed, fingerprint);
    EXPECT_EQ(got.step, 2);
    EXPECT_EQ(got.step, want.step);
    ASSERT_EQ(got.tensors.size(), want.tensors.size());
    for (const auto &[name, tensor] : want.tensors)
      EXPECT_EQ(got.tensors.at(name).data, tensor.data) << name << (byLayer ? " (in buckets)" : "");
    std::filesystem::remove(failed);
  }
  std::filesystem::remove(stopped);
  std::filesystem::remove(failed);
}

TEST(Training, BadInputFailsWithAClearError) {
  auto single = compile("examples/gpt/plans/single.hspmd");
  ASSERT_TRUE(single->result.ok);
  runtime::RunOptions options;
  options.steps = 1;
  options.data = "examples/data/no-such-file.txt";
  try {
    runtime::runThreads(single->result.programs.at(0), single->model, options);
    ADD_FAILURE() << "a missing data file must fail";
  } catch (const runtime::DataError &e) {
    EXPECT_EQ(std::string(e.what()), "examples/data/no-such-file.txt: cannot open the data file");
  }
  // A checkpoint of another model.
  auto llama = compile("examples/llama/plans/tiny_llama_single.hspmd");
  const auto path = std::filesystem::temp_directory_path() / ("hspmd_llama_ckpt_" + std::to_string(::getpid()));
  options.data = kData;
  options.save = path.string();
  runtime::runThreads(llama->result.programs.at(0), llama->model, options);
  options.save.clear();
  options.load = path.string();
  try {
    runtime::runThreads(single->result.programs.at(0), single->model, options);
    ADD_FAILURE() << "a checkpoint of another model must fail";
  } catch (const runtime::CheckpointError &e) {
    EXPECT_EQ(
        std::string(e.what()).rfind(path.string() + ": the checkpoint is of another model: it holds 'TinyLLaMA", 0), 0u)
        << e.what();
  }
  std::filesystem::remove(path);
}

// A threads run holds every device's arena, and an MPI run that hspmc starts has every process
// on this machine: where the largest plan's arenas do not fit the memory free, it is refused
// before anything is allocated (it was killed by the system midway).
TEST(Training, ArenasThatDoNotFitTheMachineAreRefused) {
  std::map<int, ir::DeviceProgram> small, large;
  for (int device : {0, 1, 2}) {
    small[device].peakBytes = int64_t{1} << 29; // 0.5 GiB
    large[device].peakBytes = int64_t{1} << 30;
  }
  runtime::RunPlans plans{{&small, &large}, {}, {}, {"small", "large"}};
  EXPECT_EQ(runtime::hostMemoryProblem(plans, int64_t{3} << 30), "");
  EXPECT_EQ(runtime::hostMemoryProblem(plans, std::nullopt), "") << "unknown: not refused";
  EXPECT_EQ(runtime::hostMemoryProblem(plans, int64_t{2} << 30),
            "a threads run holds every device's memory in this process: the arenas of plan 'large' (3 devices) "
            "need 3.0 GiB, but this machine has 2.0 GiB free (MemAvailable and SwapFree in /proc/meminfo); train "
            "it where the memory is (--backend mpi, a process per device, over several machines)");
  // hspmc train --backend mpi outside mpirun: every process on this machine.
  EXPECT_EQ(runtime::hostMemoryProblem(plans, int64_t{2} << 30, runtime::HostRun::LocalMpi),
            "hspmc starts mpirun with every process on this machine: the arenas of plan 'large' (3 devices) need "
            "3.0 GiB, but this machine has 2.0 GiB free (MemAvailable and SwapFree in /proc/meminfo); start mpirun "
            "yourself over machines that have the memory (mpirun -np 3 --hostfile FILE hspmc train ...)");
  ASSERT_TRUE(runtime::hostMemoryFree().has_value()) << "this machine has /proc/meminfo";
  EXPECT_GT(*runtime::hostMemoryFree(), 0);
}

// A checkpoint is written beside its path and renamed onto it: onto a path that is not a
// regular file (as root, /dev/null) that would replace the file, so it is refused.
TEST(Training, CheckpointIsNotRenamedOntoASpecialFile) {
  const std::string fifo =
      (std::filesystem::temp_directory_path() / ("hspmd_fifo_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  runtime::ParameterStore store;
  store.model = "m";
  try {
    store.save(fifo);
    ADD_FAILURE() << "saving onto a pipe must fail";
  } catch (const runtime::CheckpointError &e) {
    EXPECT_EQ(std::string(e.what()),
              fifo + ": not a regular file (a checkpoint is renamed onto its path, which would replace it)");
  }
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  std::filesystem::remove(fifo);
}

// A checkpoint is written under a temporary name of its own, created exclusively: a user's
// file at PATH.tmp is left alone (it was written over and renamed away), two saves to one
// path at once leave one whole checkpoint (they wrote into one file), nothing temporary is
// left, and a directory that does not exist is named with its reason.
TEST(Training, CheckpointIsWrittenUnderATemporaryNameOfItsOwn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hspmd_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "c.ckpt").string();
  std::ofstream(path + ".tmp") << "the user's own";
  auto store = [](int64_t step) {
    runtime::ParameterStore s;
    s.model = "m";
    s.step = step;
    s.tensors["w"] = {{1 << 16}, std::vector<float>(1 << 16, static_cast<float>(step))};
    return s;
  };
  std::vector<std::thread> savers;
  for (int64_t step : {1, 2})
    savers.emplace_back([&, step] {
      const runtime::ParameterStore s = store(step);
      for (int k = 0; k < 20; ++k)
        s.save(path);
    });
  for (std::thread &t : savers)
    t.join();
  const runtime::ParameterStore loaded = runtime::ParameterStore::load(path, "m");
  EXPECT_TRUE(loaded.step == 1 || loaded.step == 2) << loaded.step;
  EXPECT_EQ(loaded.tensors.at("w").data, std::vector<float>(1 << 16, static_cast<float>(loaded.step)));
  std::ifstream kept(path + ".tmp");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>()), "the user's own");
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"c.ckpt", "c.ckpt.tmp"}));
  const std::string missing = (dir / "no_such_folder" / "c.ckpt").string();
  try {
    store(1).save(missing);
    ADD_FAILURE() << "a checkpoint in a folder that does not exist";
  } catch (const runtime::CheckpointError &e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot write the checkpoint (No such file or directory)");
  }
  fs::remove_all(dir);
}

// A checkpoint's header is checked whole against the file and the program before anything is
// loaded: a negative step (it crashed), a tensor listed twice (it loaded), a missing optimizer
// state (it silently restarted the optimizer), a shape no tensor can have (std::bad_alloc),
// data that is not what the header lists and data that is not what was saved (a flipped bit
// trained on) are each an error naming the file and what is wrong.
TEST(Training, CheckpointHeadersAreChecked) {
  auto single = compile("examples/gpt/plans/single.hspmd");
  ASSERT_TRUE(single->result.ok);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hspmd_header_" + std::to_string(::getpid()))).string();
  runtime::RunOptions options;
  options.steps = 1;
  options.data = kData;
  options.save = path;
  runtime::runThreads(single->result.programs.at(0), single->model, options);
  options.save.clear();
  // The saved checkpoint: its header and each tensor's bytes.
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  const nlohmann::json header = nlohmann::json::parse(line);
  std::vector<std::string> data;
  for (const auto &entry : header["tensors"]) {
    int64_t n = 4;
    for (int64_t d : entry["shape"].get<std::vector<int64_t>>())
      n *= d;
    data.emplace_back(static_cast<size_t>(n), '\0');
    in.read(data.back().data(), n);
  }
  ASSERT_TRUE(in);
  size_t state = 0; // the first optimizer state tensor
  while (state < data.size() &&
         header["tensors"][state]["name"].get<std::string>().find(".adam_m") == std::string::npos)
    ++state;
  ASSERT_LT(state, data.size());
  const std::string stateName = header["tensors"][state]["name"];

  auto loadWith = [&](const nlohmann::json &h, const std::vector<std::string> &tensors) {
    const std::string changed = path + ".changed";
    {
      std::ofstream out(changed, std::ios::binary);
      out << h.dump() << "\n";
      for (const auto &bytes : tensors)
        out << bytes;
    }
    options.load = changed;
    std::string error;
    try {
      runtime::runThreads(single->result.programs.at(0), single->model, options);
    } catch (const std::exception &e) {
      error = e.what();
    }
    std::filesystem::remove(changed);
    // Header errors name the file; the program's own checks name the tensor.
    const std::string prefix = changed + ": ";
    return error.empty() ? "(loaded)" : error.rfind(prefix, 0) == 0 ? error.substr(prefix.size()) : error;
  };
  EXPECT_EQ(loadWith(header, data), "(loaded)");
  nlohmann::json h = header;
  h["step"] = -1;
  EXPECT_EQ(loadWith(h, data), "the checkpoint's step must be a whole number of at least 0, got -1");
  h = header;
  h["tensors"].push_back(header["tensors"][0]);
  std::vector<std::string> twice = data;
  twice.push_back(data[0]);
  EXPECT_EQ(loadWith(h, twice),
            "tensor '" + header["tensors"][0]["name"].get<std::string>() + "' is in the checkpoint twice");
  h = header;
  h["tensors"].erase(state);
  std::vector<std::string> without = data;
  without.erase(without.begin() + static_cast<long>(state));
  EXPECT_EQ(loadWith(h, without), "optimizer state '" + stateName +
                                      "' is missing from the parameters loaded (saved after 1 steps; a checkpoint "
                                      "of another optimizer has other state)");
  h = header;
  h["tensors"][0]["shape"] = {-1, 4};
  EXPECT_EQ(loadWith(h, data),
            "tensor '" + header["tensors"][0]["name"].get<std::string>() + "' has a shape no tensor can have: [-1,4]");
  h = header;
  h["tensors"][0]["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(loadWith(h, data), "tensor '" + header["tensors"][0]["name"].get<std::string>() +
                                   "' has a shape no tensor can have: [1099511627776,1099511627776]");
  // Fields of the wrong kind or missing (a JSON type error without the file's name before; a
  // missing key was looked up in a const object).
  h = header;
  h["format"] = 1;
  EXPECT_EQ(loadWith(h, data), "not an hspmd checkpoint (format is not hspmd-checkpoint-1)");
  h = header;
  h["model"] = 5;
  EXPECT_EQ(loadWith(h, data), "the checkpoint's header names no model");
  h = header;
  h["tensors"][0].erase("name");
  EXPECT_EQ(loadWith(h, data).rfind("a tensor of the header has no name or no shape: {\"crc32\":", 0), 0u);
  h = header;
  h["tensors"][0].erase("crc32");
  EXPECT_EQ(loadWith(h, data), "tensor '" + header["tensors"][0]["name"].get<std::string>() +
                                   "' has no crc32 (its data's CRC-32) in the header");
  // Names are quoted with their control bytes as \xNN.
  h = header;
  h["tensors"][0]["name"] = "a\x07"
                            "b";
  h["tensors"][1]["name"] = "a\x07"
                            "b";
  EXPECT_EQ(loadWith(h, data), "tensor 'a\\x07b' is in the checkpoint twice");
  // Another model: where it first differs is named (both were cut at 120 bytes of one prefix).
  const std::string model = header["model"];
  const size_t second = model.find(';', model.find(';') + 1);
  h = header;
  h["model"] = model.substr(0, second) + ";x[1]" + model.substr(model.find(';', second + 1));
  EXPECT_EQ(loadWith(h, data),
            "the checkpoint is of another model: its parameter 2 is 'x[1]' where the program's is '" +
                model.substr(second + 1, model.find(';', second + 1) - second - 1) + "'");
  h = header;
  h["model"] = model + ";extra[1]";
  const auto parameters = std::count(model.begin(), model.end(), ';');
  EXPECT_EQ(loadWith(h, data), "the checkpoint is of another model: it holds " + std::to_string(parameters + 1) +
                                   " parameters of 'TinyGPT', the program needs " + std::to_string(parameters));
  h = header;
  h["model"] = "Tiny\x01GPT" + model.substr(model.find(';'));
  EXPECT_EQ(loadWith(h, data),
            "the checkpoint is of another model: it holds 'Tiny\\x01GPT', the program trains 'TinyGPT'");
  std::vector<std::string> shorter = data;
  shorter.back().pop_back();
  int64_t total = 0;
  for (const auto &bytes : data)
    total += static_cast<int64_t>(bytes.size());
  EXPECT_EQ(loadWith(header, shorter), "the checkpoint's header lists " + std::to_string(total) +
                                           " bytes of tensors, the file holds " + std::to_string(total - 1));
  // One bit of the data flipped: the tensor's CRC-32 no longer matches (it trained on).
  std::vector<std::string> flipped = data;
  flipped[state][flipped[state].size() / 2] ^= 0x01;
  EXPECT_EQ(loadWith(header, flipped), "tensor '" + stateName + "' is damaged: its data's CRC-32 is not the header's");
  // A NaN with a matching CRC-32 (a run that diverged, saved): an error, not NaN losses.
  std::vector<std::string> diverged = data;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(diverged[state].data() + 8, &nan, sizeof nan);
  h = header;
  boost::crc_32_type crc;
  crc.process_bytes(diverged[state].data(), diverged[state].size());
  h["tensors"][state]["crc32"] = crc.checksum();
  EXPECT_EQ(loadWith(h, diverged), "tensor '" + stateName +
                                       "' holds NaN at element 2 (saved from a run that diverged?); training from "
                                       "it would give NaN losses");
  h = header;
  h["tensors"][0].erase("crc32");
  EXPECT_EQ(loadWith(h, data), "tensor '" + header["tensors"][0]["name"].get<std::string>() +
                                   "' has no crc32 (its data's CRC-32) in the header");
  h = header;
  h["tensors"][0]["crc32"] = int64_t{1} << 32;
  EXPECT_EQ(loadWith(h, data), "tensor '" + header["tensors"][0]["name"].get<std::string>() +
                                   "' has no crc32 (its data's CRC-32) in the header");
  std::filesystem::remove(path);
}

} // namespace

// The shape the document scheduler lays docs_dp2's batch out in: its two pipelines of four
// micro-batches of one row, and an attention pair's work against a token's from the kernels'
// FLOPs. For TinyGPT (d 64, 4 heads, FFN 4d) a pair costs 4d FLOPs forward and 2.5 times that
// backward, a token at least 24 d^2 forward in its blocks' matrix products and twice that
// backward, so a pair is below 14 / (72 d) of a token; the vocabulary's projection and the
// elementwise kernels lower it by some 10%, not by half.
TEST(Training, DocumentShapeOfAPlan) {
  auto c = compile("examples/gpt/plans/docs_dp2.hspmd");
  ASSERT_TRUE(c->result.ok);
  const runtime::DocumentShape shape = runtime::documentShape(c->result.programs.at(0), 8, 128);
  ASSERT_EQ(shape.pipelines.size(), 2u);
  EXPECT_EQ(shape.pipelines[0].start, 0);
  EXPECT_EQ(shape.pipelines[1].start, 4);
  EXPECT_EQ(shape.pipelines[1].microbatches, 4);
  EXPECT_EQ(shape.pipelines[1].size, 1);
  const double bound = 14.0 / (72.0 * 64);
  EXPECT_LT(shape.pairCost, bound);
  EXPECT_GT(shape.pairCost, 0.5 * bound);
}

// The executor's matmul fusion (runtime/Fusion.h) on the tiny GPT: what it folds is the
// autodiff's transposes and batch sums, every weight's gradient in the backward pass becomes
// one product over all rows, and the runs with and without fusion (HSPMD_FUSION=0) agree.
TEST(Fusion, FoldsTransposesAndBatchSumsIntoMatmuls) {
  auto single = compile("examples/gpt/plans/single.hspmd");
  ASSERT_TRUE(single->result.ok);
  const ir::DeviceProgram &program = single->result.programs.at(0).at(0);
  const runtime::Fusion fusion = runtime::fuseMatmuls(program);
  int weightGradients = 0, products = 0, sums = 0, skipped = 0;
  for (size_t i = 0; i < program.body.size(); ++i) {
    const ir::Instruction &in = program.body[i];
    if (fusion.skipped[i]) {
      ++skipped;
      EXPECT_TRUE(in.op == "transpose" || in.op == "sum") << i << ": " << in.op;
      EXPECT_FALSE(fusion.matmuls[i]);
    }
    if (in.op == "sum" && in.phase == ir::Phase::Backward)
      ++sums;
    if (const auto &f = fusion.matmuls[i]) {
      EXPECT_EQ(in.op, "matmul");
      const std::string &name = program.buffers[static_cast<size_t>(f->out)].value;
      products += f->transA;
      if (f->transA && name.rfind("grad.blocks[", 0) == 0)
        ++weightGradients;
    }
  }
  // Each of the 8 blocks' four weights, and the tied embedding's use as the head.
  EXPECT_EQ(weightGradients, 32);
  EXPECT_EQ(products, 33);
  EXPECT_GE(skipped, 2 * weightGradients);
  int left = 0;
  for (size_t i = 0; i < program.body.size(); ++i)
    left += program.body[i].op == "sum" && program.body[i].phase == ir::Phase::Backward && !fusion.skipped[i];
  EXPECT_LT(left, sums);

  // A transposed buffer someone else reads too stays a transpose.
  ir::DeviceProgram shared = program;
  for (size_t i = 0; i < shared.body.size(); ++i)
    if (fusion.matmuls[i] && fusion.matmuls[i]->transB) {
      const int transposed = shared.body[i].inputs[1];
      ir::Instruction reader = shared.body[i];
      reader.outputs = {reader.outputs[0]};
      shared.body.push_back(reader); // a second reader of the transposed weight
      const runtime::Fusion again = runtime::fuseMatmuls(shared);
      EXPECT_FALSE(again.matmuls[i] && again.matmuls[i]->transB) << "buffer " << transposed;
      break;
    }

  runtime::RunOptions options;
  options.steps = 6;
  options.seed = 3;
  const auto fused = train(*single, options);
  setenv("HSPMD_FUSION", "0", 1);
  const auto unfused = train(*single, options);
  unsetenv("HSPMD_FUSION");
  ASSERT_EQ(fused.size(), unfused.size());
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_NEAR(fused[i], unfused[i], 1e-6 * std::abs(unfused[i])) << "step " << i + 1;
}

// An offloaded executor (runtime/Offload.h) keeps its arena as the host's staging area and
// runs every kernel and copy in the offload's memory. Through the offload of the tests (a
// second host arena) a run computes what the executor computes alone, bit for bit (fusion off
// in both), on the single-device plans, with micro-batches and recomputation, from a
// checkpoint and into one; and each step moves only its inputs up and its losses down.
// The offload of the tests, counting the bytes it is given and gives back.
struct CountingOffload : runtime::HostOffload {
  int64_t &up, &down;
  CountingOffload(const ir::DeviceProgram &p, int64_t &uploaded, int64_t &downloaded)
      : HostOffload(p), up(uploaded), down(downloaded) {}
  void upload(int64_t offset, const char *from, int64_t bytes) override {
    up += bytes;
    HostOffload::upload(offset, from, bytes);
  }
  void download(int64_t offset, char *to, int64_t bytes) override {
    down += bytes;
    HostOffload::download(offset, to, bytes);
  }
};

TEST(Offload, RunsWhatTheExecutorRunsAndMovesOnlyWhatTheHostTouches) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string accumulating = (dir / ("hspmd_offload_mb_" + std::to_string(::getpid()) + ".hspmd")).string();
  std::ofstream(accumulating) << "import \"" << std::filesystem::absolute("examples/gpt/tiny_gpt.hspmd").string()
                              << "\"\nplan mb for TinyGPT {\n  cluster \""
                              << std::filesystem::absolute("examples/clusters/cpu4.toml").string()
                              << "\"\n  bind B = 8, S = 64\n  recompute\n  pipeline main share 1 microbatches 4 {\n"
                                 "    stage devices [0] layers blocks with wte, lnf\n  }\n}\n";
  setenv("HSPMD_FUSION", "0", 1);
  for (const std::string plan :
       {"examples/gpt/plans/single.hspmd", "examples/llama/plans/tiny_llama_single.hspmd", accumulating.c_str()}) {
    auto c = compile(plan);
    ASSERT_TRUE(c->result.ok) << plan;
    const ir::DeviceProgram &program = c->result.programs.at(0).at(0);
    int made = 0;
    int64_t uploaded = 0, downloaded = 0;
    runtime::RunOptions options;
    options.steps = 4;
    options.seed = 5;
    const std::string alone = (dir / ("hspmd_offload_a_" + std::to_string(::getpid()))).string();
    const std::string offloaded = (dir / ("hspmd_offload_b_" + std::to_string(::getpid()))).string();
    options.save = alone;
    const auto want = train(*c, options);
    options.offload = [&](const runtime::OffloadSite &site) {
      ++made;
      return std::make_unique<CountingOffload>(site.program, uploaded, downloaded);
    };
    options.save = offloaded;
    const auto got = train(*c, options);
    EXPECT_EQ(got, want) << plan;
    const std::string model = runtime::ParameterStore::fingerprint(c->model.name, c->model.params);
    const auto a = runtime::ParameterStore::load(alone, model), o = runtime::ParameterStore::load(offloaded, model);
    EXPECT_EQ(a.step, o.step) << plan;
    ASSERT_EQ(a.tensors.size(), o.tensors.size()) << plan;
    for (const auto &[name, tensor] : a.tensors)
      EXPECT_EQ(o.tensors.at(name).data, tensor.data) << plan << ": " << name;
    // The arena up once; then each micro-batch's inputs up and its loss down; the arena down
    // once, for the checkpoint.
    ASSERT_EQ(made, 1) << plan;
    int64_t inputs = 0;
    for (const ir::Buffer &b : program.buffers)
      inputs += b.role == ir::BufferRole::Input ? b.bytes() : 0;
    EXPECT_EQ(uploaded, program.peakBytes + options.steps * program.microbatches * inputs) << plan;
    EXPECT_EQ(downloaded, options.steps * program.microbatches * 4 + program.peakBytes) << plan;
    // On from the checkpoint: the state goes up again, and the steps after it are the same.
    options.load = alone;
    options.save.clear();
    options.steps = 2;
    const auto again = train(*c, options);
    options.offload = nullptr;
    EXPECT_EQ(again, train(*c, options)) << plan;
    std::filesystem::remove(alone);
    std::filesystem::remove(offloaded);
  }
  unsetenv("HSPMD_FUSION");
  std::filesystem::remove(accumulating);
}

// Sends, receives, collectives and the vocabulary-parallel cross-entropy (tp2) run on the host
// with their buffers staged down from the offload and back up: every kind of communication,
// offloaded, gives the executor's losses bit for bit (fusion off in both). The cross-entropy's
// kernels run on the offload, and of it only its per-row values come down (the rows' maxima,
// then their sums and target logits), never its logits.
// The offload of the tests, logging the kernels it runs outside the program and what it gives
// back: "run OP", "down BYTES".
struct LoggingOffload : runtime::HostOffload {
  std::vector<std::string> &log;
  LoggingOffload(const ir::DeviceProgram &p, std::vector<std::string> &events) : HostOffload(p), log(events) {}
  void download(int64_t offset, char *to, int64_t bytes) override {
    log.push_back("down " + std::to_string(bytes));
    HostOffload::download(offset, to, bytes);
  }
  void run(const std::string &op, const ir::AttrMap &attrs, std::span<const runtime::TensorView> inputs,
           std::span<const runtime::TensorView> outputs, const runtime::KernelContext &context) override {
    log.push_back("run " + op);
    HostOffload::run(op, attrs, inputs, outputs, context);
  }
};

TEST(Offload, StagesCommunicationThroughTheHost) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 28 s under the sanitizers; the other Offload tests run there
  setenv("HSPMD_FUSION", "0", 1);
  int crossEntropies = 0;
  for (const char *plan :
       {"examples/gpt/plans/tp2.hspmd", "examples/gpt/plans/pipeline2_recompute.hspmd",
        "examples/gpt/plans/dp2_zero.hspmd", "examples/gpt/plans/hetero4.hspmd", "examples/gpt/plans/cp_asym.hspmd",
        "examples/gpt/plans/hp_asym.hspmd", "examples/llama/plans/tiny_llama_hp_zero_heads.hspmd",
        "examples/llama/plans/tiny_llama_cp_tp2.hspmd"}) {
    auto c = compile(plan);
    ASSERT_TRUE(c->result.ok) << plan;
    runtime::RunOptions options;
    options.steps = 3;
    const auto want = train(*c, options);
    std::mutex made;
    std::map<int, std::vector<std::string>> logs; // by device
    options.offload = [&](const runtime::OffloadSite &site) {
      std::lock_guard lock(made);
      return std::make_unique<LoggingOffload>(site.program, logs[site.program.device]);
    };
    EXPECT_EQ(train(*c, options), want) << plan;
    for (const auto &[device, log] : logs) {
      const ir::DeviceProgram &program = c->result.programs.at(0).at(device);
      std::set<int64_t> rows; // of each cross-entropy of the program
      for (const ir::Instruction &in : program.body)
        if (in.kind == ir::InstrKind::Kernel && !in.group.empty())
          rows.insert(runtime::vocabParallelRows(program, in));
      int ran = 0;
      for (size_t i = 0; i < log.size(); ++i) {
        if (log[i] != "run vocab_parallel_max")
          continue;
        ++ran;
        ASSERT_LT(i + 4, log.size()) << plan << " device " << device;
        const int64_t bytes = std::stoll(log[i + 1].substr(5));
        EXPECT_TRUE(rows.count(bytes / 4)) << plan << " device " << device << ": " << log[i + 1];
        EXPECT_EQ(log[i + 1], "down " + std::to_string(bytes)) << plan;
        EXPECT_EQ(log[i + 2], "run vocab_parallel_sums") << plan;
        EXPECT_EQ(log[i + 3], "down " + std::to_string(2 * bytes)) << plan;
        EXPECT_TRUE(log[i + 4] == "run vocab_parallel_loss" || log[i + 4] == "run vocab_parallel_grad")
            << plan << ": " << log[i + 4];
      }
      // Each micro-batch's loss and gradient, every step.
      EXPECT_EQ(ran, rows.empty() ? 0 : 2 * options.steps * program.microbatches) << plan << " device " << device;
      crossEntropies += ran;
    }
  }
  EXPECT_GT(crossEntropies, 0);
  unsetenv("HSPMD_FUSION");
}

// The NCCL backend on the host, counting the calls each device made, and the bytes the host
// took down from its offload but for whole arenas (the state, once the run ends).
struct CountedNccl : runtime::gpu::NcclOffload {
  std::atomic<int64_t> &total, &down;
  int64_t arena;
  CountedNccl(const runtime::OffloadSite &site, const std::shared_ptr<const runtime::gpu::NcclPlan> &plan,
              std::atomic<int64_t> &calls, std::atomic<int64_t> &downloaded)
      : NcclOffload(std::make_unique<runtime::HostOffload>(site.program), plan, site.program,
                    std::make_unique<runtime::gpu::HostNccl>(plan, site.comm)),
        total(calls), down(downloaded), arena(site.program.peakBytes) {}
  ~CountedNccl() override { total += callsMade(); }
  void download(int64_t offset, char *to, int64_t bytes) override {
    if (bytes != arena)
      down += bytes;
    NcclOffload::download(offset, to, bytes);
  }
};

// The NCCL backend (runtime/gpu/NcclRun.h) run through on the host: each device's sends,
// receives and collectives are its plan's NCCL calls in its offload's memory (NCCL's own
// collectives, messages over a channel per pair matched by their order, staged receives,
// collectives as messages), and training gives the executor's losses bit for bit (fusion off).
// Every example plan that trains on more than one device.
TEST(NcclBackend, EveryPlanTrainsAsTheExecutorOnItsNcclCalls) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // about a minute under the sanitizers; the smaller NCCL tests run there
  setenv("HSPMD_FUSION", "0", 1);
  int plans = 0;
  for (const char *dir : {"examples/gpt/plans", "examples/llama/plans"})
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
      const std::string plan = entry.path().string();
      if (entry.path().extension() != ".hspmd" || entry.path().filename().string().starts_with("llama"))
        continue; // (LLaMA 7B to 32B: too large to train here)
      auto c = compile(plan);
      if (!c->result.ok || c->result.programs.size() != 1 || c->result.programs[0].size() < 2)
        continue;
      runtime::RunOptions options;
      options.steps = 2;
      const auto want = train(*c, options);
      std::atomic<int64_t> calls{0}, downloaded{0};
      options.offload = [&](const runtime::OffloadSite &site) {
        return std::make_unique<CountedNccl>(site, runtime::gpu::ncclPlanOf(site.plan), calls, downloaded);
      };
      EXPECT_EQ(train(*c, options), want) << plan;
      EXPECT_GT(calls, 0) << plan; // the communication was NCCL calls
      // and nothing of it went through the host: only each micro-batch's loss came down
      int64_t losses = 0;
      for (const auto &[device, program] : c->result.programs[0])
        if (program.lossBuffer >= 0)
          losses += options.steps * 4 *
                    std::count_if(program.schedule.begin(), program.schedule.end(),
                                  [](const ir::ScheduleSlot &slot) { return slot.phase == ir::Phase::Forward; });
      EXPECT_EQ(downloaded, losses) << plan;
      ++plans;
    }
  EXPECT_GE(plans, 33); // every one there is (2026-12-04)
  unsetenv("HSPMD_FUSION");
}

// Mixed precision (--precision bf16, PipelineOptions::bf16): activations, their gradients and
// their messages in bf16, parameters, gradients, optimizer state and the loss in f32. On plans
// with every kind of parallelism, 20 steps stay within 2e-2 of fp32's losses (the bound
// for bf16 on a GPU), are not fp32's, and take less memory and smaller messages.
TEST(Precision, Bf16TrainsWithinTwoPercentOfFp32) {
  std::vector<const char *> plans = {"examples/gpt/plans/single.hspmd",
                                     "examples/gpt/plans/tp2.hspmd",
                                     "examples/gpt/plans/pipeline2_recompute.hspmd",
                                     "examples/gpt/plans/dp2_zero.hspmd",
                                     "examples/gpt/plans/hetero4.hspmd",
                                     "examples/gpt/plans/cp_asym.hspmd",
                                     "examples/gpt/plans/hp_asym.hspmd",
                                     "examples/llama/plans/tiny_llama_hp_zero_heads.hspmd",
                                     "examples/llama/plans/tiny_llama_cp_tp2.hspmd"};
  int steps = 20;
#if defined(__SANITIZE_ADDRESS__) // GCC's
#define HSPMD_UNDER_ASAN 1
#elif defined(__has_feature) // clang's, which builds the sanitizer run
#if __has_feature(address_sanitizer)
#define HSPMD_UNDER_ASAN 1
#endif
#endif
#ifdef HSPMD_UNDER_ASAN
  // Under AddressSanitizer (scripts/test.sh's second build) the numerics are the main build's
  // to check: two plans and a few steps run the code (the nine took about 4 minutes there).
  plans = {"examples/gpt/plans/tp2.hspmd", "examples/llama/plans/tiny_llama_cp_tp2.hspmd"};
  steps = 4;
#endif
  for (const char *plan : plans) {
    auto full = compile(plan), half = compile(plan, true);
    ASSERT_TRUE(full->result.ok && half->result.ok) << plan;
    int64_t fullBytes = 0, halfBytes = 0, fullPeak = 0, halfPeak = 0;
    for (const auto &[device, program] : half->result.programs[0]) {
      const ir::DeviceProgram &reference = full->result.programs[0].at(device);
      int narrow = 0;
      for (const ir::Buffer &b : program.buffers) {
        narrow += b.dtype == ir::DType::BF16;
        if (b.role == ir::BufferRole::Parameter || b.role == ir::BufferRole::State || b.id == program.lossBuffer) {
          EXPECT_EQ(b.dtype, ir::DType::F32) << plan << " device " << device << ": " << b.value;
        }
      }
      EXPECT_GT(narrow, 0) << plan << " device " << device;
      for (const ir::Instruction &in : program.body)
        halfBytes += in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Collective ? in.bytes : 0;
      for (const ir::Instruction &in : reference.body)
        fullBytes += in.kind == ir::InstrKind::Send || in.kind == ir::InstrKind::Collective ? in.bytes : 0;
      fullPeak += reference.peakBytes;
      halfPeak += program.peakBytes;
    }
    EXPECT_LT(halfPeak, fullPeak) << plan;
    // Data parallelism moves only gradients and parameters (f32); the others move activations.
    if (std::string(plan).find("dp2_zero") != std::string::npos) {
      EXPECT_EQ(halfBytes, fullBytes) << plan;
    } else if (half->result.programs[0].size() > 1) {
      EXPECT_LT(halfBytes, fullBytes) << plan;
    }
    runtime::RunOptions options;
    options.steps = steps;
    const auto want = train(*full, options), got = train(*half, options);
    ASSERT_EQ(got.size(), want.size()) << plan;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 2e-2 * std::abs(want[i])) << plan << " step " << i + 1;
    EXPECT_NE(got, want) << plan; // the activations were rounded
  }
}

// Under bf16 an offload computes what the executor computes, bit for bit, communicating
// through the host or on its NCCL calls (bf16 reductions added in float and rounded at each
// member, in group order, on both).
TEST(Precision, Bf16OffloadedAndOnNcclCallsIsTheExecutors) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 76 s under the sanitizers; the smaller bf16 and offload tests run there
  // Tensor parallelism over four devices: all-reduces of bf16 activations with more than two
  // members, where rounding at each member differs from rounding the sum once.
  const std::string tp4 =
      (std::filesystem::temp_directory_path() / ("hspmd_tp4_" + std::to_string(::getpid()) + ".hspmd")).string();
  std::ofstream(tp4) << "import \"" << std::filesystem::absolute("examples/gpt/tiny_gpt.hspmd").string()
                     << "\"\nplan tp4 for TinyGPT {\n  cluster \""
                     << std::filesystem::absolute("examples/clusters/cpu4.toml").string()
                     << "\"\n  bind B = 8, S = 64\n  pipeline main share 1 microbatches 1 {\n"
                        "    stage devices [0, 1, 2, 3] tp 4 layers blocks with wte, lnf\n  }\n}\n";
  setenv("HSPMD_FUSION", "0", 1);
  for (const std::string &plan :
       {tp4, std::string("examples/gpt/plans/dp2_zero.hspmd"), std::string("examples/gpt/plans/hp_asym.hspmd"),
        std::string("examples/gpt/plans/pipeline2_recompute.hspmd")}) {
    auto c = compile(plan, true);
    ASSERT_TRUE(c->result.ok) << plan;
    runtime::RunOptions options;
    options.steps = 3;
    const auto want = train(*c, options);
    options.offload = [](const runtime::OffloadSite &site) {
      return std::make_unique<runtime::HostOffload>(site.program);
    };
    EXPECT_EQ(train(*c, options), want) << plan << " (offloaded)";
    options.offload = [](const runtime::OffloadSite &site) {
      const auto calls = runtime::gpu::ncclPlanOf(site.plan);
      return std::make_unique<runtime::gpu::NcclOffload>(std::make_unique<runtime::HostOffload>(site.program), calls,
                                                         site.program,
                                                         std::make_unique<runtime::gpu::HostNccl>(calls, site.comm));
    };
    EXPECT_EQ(train(*c, options), want) << plan << " (NCCL calls)";
  }
  unsetenv("HSPMD_FUSION");
  std::filesystem::remove(tp4);
}

// Plans that change during a run, offloaded: a switch moves the state out of the old
// executors' host copies (brought down from the offload) into the new ones (taken up before
// their first kernel), and a run that loses a device goes on under a recovery plan. Both give
// the losses they give without an offload, bit for bit (fusion off in both).
TEST(Offload, SwitchesAndRecoversAsTheExecutorDoes) {
  auto zero = compile("examples/gpt/plans/dp2_zero.hspmd");
  auto hetero = compile("examples/gpt/plans/hetero4.hspmd");
  auto pipeline = compile("examples/gpt/plans/pipeline2_recompute.hspmd");
  ASSERT_TRUE(zero->result.ok && hetero->result.ok && pipeline->result.ok);
  setenv("HSPMD_FUSION", "0", 1);
  const runtime::StateSwitch transfer = runtime::planSwitch(zero->result.programs.at(0), hetero->result.programs.at(0));
  auto run = [&](const runtime::OffloadFactory &offload) {
    runtime::RunOptions options;
    options.data = kData;
    options.steps = 6;
    options.offload = offload;
    runtime::RunPlans switching{{&zero->result.programs.at(0), &hetero->result.programs.at(0)}, {}, {}, {}};
    switching.switches.push_back(runtime::PlanSwitch{3, 1, &transfer, "switched"});
    const auto switched = runtime::runThreads(switching, zero->model, options).losses;
    runtime::RunPlans recovering{{&hetero->result.programs.at(0), &pipeline->result.programs.at(0)}, {}, {}, {}};
    recovering.recoveries = {1};
    options.faults = {runtime::Fault{4, 3, runtime::FaultPhase::Backward, 1, {}}};
    const auto recovered = runtime::runThreads(recovering, hetero->model, options).losses;
    return std::make_pair(switched, recovered);
  };
  const auto [wantSwitched, wantRecovered] = run({});
  // offloaded, communication on the host; and on the NCCL backend's calls (each plan its own)
  for (const runtime::OffloadFactory &offload : {runtime::OffloadFactory([](const runtime::OffloadSite &site) {
                                                   return std::make_unique<runtime::HostOffload>(site.program);
                                                 }),
                                                 runtime::OffloadFactory(runtime::gpu::hostNcclOffload)}) {
    const auto [switched, recovered] = run(offload);
    EXPECT_EQ(switched, wantSwitched);
    EXPECT_EQ(recovered, wantRecovered);
    EXPECT_EQ(switched.size(), 6u);
    EXPECT_EQ(recovered.size(), 6u);
  }
  unsetenv("HSPMD_FUSION");
}

// A run that fails gives up each failed device's offload (Offload::abandon) before the
// offload is destroyed, and a run that goes well gives up none: the NCCL backend then aborts
// its communicators at once rather than finalizing them, which waits for peers that may never
// come (GpuNccl.h). Here device 1 dies in step 2 and the run does not recover: device 0 fails.
namespace {

// The abandon() calls of the offloads of a run, by a key of the test's (the device, ...), and
// how many there had been when each offload was destroyed.
template <typename Key> struct AbandonRecord {
  std::mutex lock;
  std::map<Key, int> abandoned, atTheEnd;
};

// An offload of the tests that counts its abandon() calls in an AbandonRecord.
template <typename Key> struct Abandoning : runtime::HostOffload {
  Key key;
  AbandonRecord<Key> &record;
  Abandoning(const ir::DeviceProgram &p, Key k, AbandonRecord<Key> &r) : HostOffload(p), key(k), record(r) {}
  ~Abandoning() override {
    std::lock_guard<std::mutex> hold(record.lock);
    record.atTheEnd[key] = record.abandoned[key];
  }
  void abandon() override {
    std::lock_guard<std::mutex> hold(record.lock);
    ++record.abandoned[key];
  }
};

} // namespace

TEST(Offload, AFailedRunGivesUpTheOffloadsOfItsFailedDevices) {
  auto c = compile("examples/gpt/plans/tp2.hspmd");
  ASSERT_TRUE(c->result.ok);
  using Record = AbandonRecord<int>; // by device
  auto run = [&](Record &record, const std::vector<runtime::Fault> &faults) {
    runtime::RunOptions options;
    options.data = kData;
    options.steps = 3;
    options.faults = faults;
    options.offload = [&](const runtime::OffloadSite &site) {
      return std::make_unique<Abandoning<int>>(site.program, site.program.device, record);
    };
    return runtime::runThreads(c->result.programs.at(0), c->model, options);
  };
  Record failed;
  EXPECT_THROW(run(failed, {runtime::Fault{2, 1, runtime::FaultPhase::Backward, 1, {}}}), runtime::RunError);
  EXPECT_EQ(failed.abandoned[0], 1);
  EXPECT_EQ(failed.atTheEnd[0], 1);  // given up before it was destroyed
  EXPECT_EQ(failed.abandoned[1], 0); // the dead device's thread stopped where it died
  Record wentWell;
  EXPECT_EQ(run(wentWell, {}).losses.size(), 3u);
  EXPECT_EQ(wentWell.atTheEnd.size(), 2u);
  EXPECT_EQ(wentWell.abandoned[0] + wentWell.abandoned[1], 0);
}

// A recovery gives up the communication of the plan a device died in (the NCCL backend aborts
// those communicators, whose calls with the dead device would never end) before the state is
// moved out of the offloads, and the recovery plan's offloads are made anew and not given up; a
// planned switch, where nobody died, gives up nothing. Here device 3 of hetero4 dies in step 4
// and the survivors go on under pipeline2_recompute, with the losses of the run without offloads.
TEST(Offload, ARecoveryGivesUpTheCommunicationOfThePlanADeviceDiedIn) {
  auto hetero = compile("examples/gpt/plans/hetero4.hspmd");
  auto pipeline = compile("examples/gpt/plans/pipeline2_recompute.hspmd");
  ASSERT_TRUE(hetero->result.ok && pipeline->result.ok);
  const std::map<int, ir::DeviceProgram> &before = hetero->result.programs.at(0);
  using Key = std::pair<bool, int>; // (under hetero4, device)
  using Record = AbandonRecord<Key>;
  setenv("HSPMD_FUSION", "0", 1);
  auto run = [&](Record *record) {
    runtime::RunOptions options;
    options.data = kData;
    options.steps = 6;
    options.faults = {runtime::Fault{4, 3, runtime::FaultPhase::Backward, 1, {}}};
    if (record)
      options.offload = [&, record](const runtime::OffloadSite &site) {
        return std::make_unique<Abandoning<Key>>(site.program, Key(&site.plan == &before, site.program.device),
                                                 *record);
      };
    runtime::RunPlans plans{{&before, &pipeline->result.programs.at(0)}, {}, {}, {}};
    plans.recoveries = {1};
    return runtime::runThreads(plans, hetero->model, options).losses;
  };
  const std::vector<double> want = run(nullptr);
  Record record;
  EXPECT_EQ(run(&record), want);
  unsetenv("HSPMD_FUSION");
  EXPECT_EQ(want.size(), 6u);
  for (int survivor : {0, 1, 2}) {
    EXPECT_EQ(record.abandoned[std::make_pair(true, survivor)], 1) << "device " << survivor;
    EXPECT_EQ(record.atTheEnd[std::make_pair(true, survivor)], 1)
        << "device " << survivor; // given up before it was destroyed
  }
  EXPECT_EQ(record.abandoned[std::make_pair(true, 3)], 0); // the dead device's thread stopped where it died
  int made = 0;
  for (const auto &[key, calls] : record.atTheEnd)
    if (!key.first) {
      ++made;
      EXPECT_EQ(calls, 0) << "device " << key.second << " under the recovery plan";
    }
  EXPECT_EQ(made, static_cast<int>(pipeline->result.programs.at(0).size()));
}

// The NCCL backend writes into the memory of the offload it wraps (a GPU's) by its own calls:
// it tells that offload which instruction wrote (Offload::changed: a GPU offload's bf16 copies
// of parameters follow it) and when a step begins. Under `zero`, the gathered parameters are
// among what it writes.
TEST(NcclBackend, TellsTheOffloadItWrapsWhatItWrites) {
  auto c = compile("examples/gpt/plans/dp2_zero.hspmd");
  ASSERT_TRUE(c->result.ok);
  struct Told {
    std::mutex lock;
    std::map<int, std::set<int>> written; // device -> buffers
    std::map<int, int> steps;             // device -> steps begun
  } told;
  struct Listening : runtime::HostOffload {
    const ir::DeviceProgram &program;
    Told &told;
    Listening(const ir::DeviceProgram &p, Told &t) : HostOffload(p), program(p), told(t) {}
    void changed(const ir::Instruction &in) override {
      std::lock_guard<std::mutex> hold(told.lock);
      told.written[program.device].insert(in.outputs.begin(), in.outputs.end());
    }
    void beginStep(const std::vector<unsigned char> &) override {
      std::lock_guard<std::mutex> hold(told.lock);
      ++told.steps[program.device];
    }
  };
  runtime::RunOptions options;
  options.data = kData;
  options.steps = 2;
  options.offload = [&](const runtime::OffloadSite &site) {
    const auto calls = runtime::gpu::ncclPlanOf(site.plan);
    return std::make_unique<runtime::gpu::NcclOffload>(std::make_unique<Listening>(site.program, told), calls,
                                                       site.program,
                                                       std::make_unique<runtime::gpu::HostNccl>(calls, site.comm));
  };
  runtime::runThreads(c->result.programs.at(0), c->model, options);
  for (const auto &[device, program] : c->result.programs.at(0)) {
    SCOPED_TRACE("device " + std::to_string(device));
    EXPECT_EQ(told.steps[device], 2);
    std::set<int> communicated;
    bool parameter = false;
    for (const ir::Instruction &in : program.body)
      if (in.kind != ir::InstrKind::Kernel)
        for (int id : in.outputs)
          if (in.kind != ir::InstrKind::Copy) {
            communicated.insert(id);
            parameter = parameter || program.buffers[static_cast<size_t>(id)].role == ir::BufferRole::Parameter;
          }
    EXPECT_EQ(told.written[device], communicated);
    EXPECT_TRUE(parameter);
  }
}
