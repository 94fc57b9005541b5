// hspmc as a user runs it: exit codes, output and --help.
#include "CliSupport.h"
#include "ir/DeviceProgram.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace {

using namespace hspmd::testing;

// Runs hspmc with `args`; it must exit with `code` and print exactly `output`.
void expectRun(const std::string &args, int code, const std::string &output) {
  const CliRun run = hspmc(args);
  EXPECT_EQ(run.code, code) << args;
  EXPECT_EQ(run.output, output) << args;
}

// Runs hspmc with `args`; it must exit with `code`, its output ending with `last` (after the
// progress lines it printed first).
void expectRunEndingWith(const std::string &args, int code, const std::string &last) {
  const CliRun run = hspmc(args);
  EXPECT_EQ(run.code, code) << args;
  ASSERT_GE(run.output.size(), last.size()) << run.output;
  EXPECT_EQ(run.output.substr(run.output.size() - last.size()), last) << run.output;
}

// The processes whose environment has HSPMD_KILL_MARK=`mark` (/proc); with `rank`, only that
// MPI rank's.
std::vector<int> markedProcesses(const std::string &mark, int rank = -1) {
  std::vector<int> found;
  for (const auto &entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    std::string variable;
    bool marked = false, ranked = rank < 0;
    while (std::getline(in, variable, '\0')) {
      marked = marked || variable == "HSPMD_KILL_MARK=" + mark;
      ranked = ranked || variable == "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    }
    if (marked && ranked)
      found.push_back(std::stoi(name));
  }
  return found;
}

// Kills (SIGKILL) the process of MPI rank `rank` whose environment has HSPMD_KILL_MARK=`mark`:
// its pid, or 0 where there is none.
int killRank(const std::string &mark, int rank) {
  for (int pid : markedProcesses(mark, rank))
    if (kill(pid, SIGKILL) == 0)
      return pid;
  return 0;
}

// Runs `command` (its output and errors together), killing (SIGKILL) the process of MPI rank
// `rank` marked `mark` (killRank) once a line starting with `line` is printed.
struct KilledRun {
  std::string output;
  int status = 0, killed = 0; // pclose's status; the pid killed, 0 where none was
};
KilledRun runKillingRank(const std::string &command, const std::string &mark, int rank, const std::string &line) {
  KilledRun run;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return run;
  std::array<char, 4096> text;
  while (fgets(text.data(), text.size(), pipe)) {
    run.output += text.data();
    if (run.killed == 0 && std::string(text.data()).rfind(line, 0) == 0)
      run.killed = killRank(mark, rank);
  }
  run.status = pclose(pipe);
  return run;
}

TEST(Cli, CheckAcceptsEveryStdlibAndExampleFile) {
  CliRun run = hspmc("check $(find stdlib examples -name '*.hspmd' -o -name '*.toml' | sort)");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("ok: "), std::string::npos);
}

// The memory check reports the peak of the device's training program (memory planning), the
// same number `dump-ir --train --after plan-memory` prints (dump-program, gated by the check,
// refuses the plan).
TEST(Cli, LintMemoryCheckUsesThePlannedPeak) {
  CliRun program = hspmc("dump-ir tests/lint/hs111_memory.hspmd --train --after plan-memory");
  ASSERT_EQ(program.code, 0) << program.output.substr(0, 500);
  const std::string header = "program device 0 plan 0 peak ";
  ASSERT_EQ(program.output.rfind(header, 0), 0u);
  const double peak = std::stod(program.output.substr(header.size()));
  char mib[64];
  std::snprintf(mib, sizeof mib, "%.1f MiB", peak / (1024 * 1024));
  CliRun lint = hspmc("lint tests/lint/hs111_memory.hspmd");
  EXPECT_EQ(lint.code, 1);
  EXPECT_NE(lint.output.find("device 0 needs " + std::string(mib) + " by the memory plan of its training program"),
            std::string::npos)
      << mib << "\n"
      << lint.output;
}

// docs/gpu.md: dump-program --nccl prints the NCCL calls of one step. Pipeline stages talk
// over a channel per direction; the first call is micro-batch 0's activation to stage 1, with
// the tag the DeviceProgram's send has for that micro-batch.
TEST(Cli, DumpProgramPrintsTheNcclCalls) {
  CliRun program = hspmc("dump-program examples/gpt/plans/pipeline2.hspmd --device 0 --train");
  ASSERT_EQ(program.code, 0) << program.output.substr(0, 500);
  const std::smatch send = [&] {
    std::smatch m;
    std::regex_search(program.output, m, std::regex(R"(\n  send %\d+ to 1 bytes (\d+) tag (\d+) )"));
    return m;
  }();
  ASSERT_FALSE(send.empty()) << program.output.substr(0, 500);
  const std::string tag = std::to_string(hspmd::ir::expandedTag(std::stoll(send[2]), hspmd::ir::Phase::Forward, 0));
  CliRun nccl = hspmc("dump-program examples/gpt/plans/pipeline2.hspmd --device 0 --train --nccl");
  ASSERT_EQ(nccl.code, 0) << nccl.output.substr(0, 500);
  EXPECT_EQ(nccl.output.rfind("channel 0 -> 1\nchannel 1 -> 0\nsend " + send[1].str() + " to 1 tag " + tag + "\n", 0),
            0u)
      << nccl.output.substr(0, 300);
}

// docs/runtime.md: --precision bf16 trains with activations in bf16 (losses near fp32's, not
// equal), prints the precision in its first line, and hspmc build writes bf16 buffers; an
// unknown precision is a usage error.
TEST(Cli, TrainAndBuildInBf16) {
  const std::string args = docsCommand("runtime.md", "bf16"); // the docs' example, as shown
  ASSERT_FALSE(args.empty());
  const std::string straight = args.substr(0, args.find(" --precision"));
  CliRun full = hspmc(straight + " --losses build/cli_fp32_losses.json"),
         half = hspmc(args + " --losses build/cli_bf16_losses.json");
  ASSERT_EQ(full.code, 0) << full.output;
  ASSERT_EQ(half.code, 0) << half.output;
  EXPECT_NE(half.output.find("training TinyGPT under plan 'tp2' on 2 devices (threads, bf16), 8 x 64 tokens per step"),
            std::string::npos)
      << half.output;
  // The losses the docs show. bf16 rounds what each kernel writes, so the last digit of a later
  // step follows the machine's sgemm (5.0347 on one x86 machine, 5.0349 on an AVX-512 EPYC):
  // near, not equal.
  auto lossAt = [](const std::string &output, const std::string &step) {
    const size_t at = output.find("\n" + step + "  loss ");
    return at == std::string::npos ? 0.0 : std::stod(output.substr(at + step.size() + 8));
  };
  EXPECT_NE(half.output.find("\nstep 1/5  loss 5.5266 "), std::string::npos) << half.output;
  EXPECT_NEAR(lossAt(half.output, "step 5/5"), 5.0347, 1e-3) << half.output;
  EXPECT_NEAR(lossAt(full.output, "step 5/5"), 5.0350, 1e-4) << full.output;
  const std::vector<double> want = lossesOf("build/cli_fp32_losses.json"), got = lossesOf("build/cli_bf16_losses.json");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-2 * std::abs(want[i])) << "step " << i + 1;
  EXPECT_NE(got, want);
  CliRun bad = hspmc("train examples/gpt/plans/tp2.hspmd --data examples/data/gpl-3.txt --precision fp16");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.output, "--precision: fp16 not in {fp32,bf16}\nRun with --help for more information.\n");
  const std::string out = "build/cli_bf16_build";
  std::filesystem::remove_all(out);
  CliRun build = hspmc("build examples/gpt/plans/tp2.hspmd --precision bf16 --no-compile -o " + out);
  ASSERT_EQ(build.code, 0) << build.output;
  EXPECT_NE(readText(out + "/device_0.cpp").find(": bf16["), std::string::npos);
  CliRun dump = hspmc("dump-program examples/gpt/plans/tp2.hspmd --device 0 --train --precision bf16");
  ASSERT_EQ(dump.code, 0);
  EXPECT_NE(dump.output.find("\n  buffer %52 \"0\" : bf16[8, 64, 64] at "), std::string::npos)
      << dump.output.substr(0, 3000);
  std::filesystem::remove_all(out);
}

// Every command checks the programs it runs: a plan whose device holds its f32 arena (22.5
// MiB) but not more than 18.4 MiB fails lint's memory check (HS111) in fp32 and passes it in
// bf16 (lint, train, simulate alike), and trains in bf16.
TEST(Cli, Bf16PlansAreCheckedAsBf16) {
  std::ofstream("build/cli_bf16_small.toml") << "name = \"small\"\ninter_node_gbps = 5.0\n[[nodes]]\nname = \"local\"\n"
                                                "type = \"tiny\"\ndevices = 1\n[types.tiny]\nbf16_tflops = 1.0\n"
                                                "memory_gib = 0.018\nhbm_gbps = 100.0\nintra_node_gbps = 10.0\n";
  std::ofstream("build/cli_bf16_small.hspmd")
      << "import \"" << std::filesystem::absolute("examples/gpt/tiny_gpt.hspmd").string()
      << "\"\nplan small for TinyGPT {\n  cluster \"cli_bf16_small.toml\"\n  bind B = 8, S = 64\n"
         "  pipeline main share 1 microbatches 1 {\n    stage devices [0] layers blocks with wte, lnf\n  }\n}\n";
  const std::string plan = "build/cli_bf16_small.hspmd";
  CliRun full = hspmc("lint " + plan);
  EXPECT_EQ(full.code, 1);
  EXPECT_NE(full.output.find("error: device 0 needs 22.5 MiB by the memory plan of its training program (first-order "
                             "estimate 32.1 MiB), but a tiny has 18.4 MiB [HS111]"),
            std::string::npos)
      << full.output;
  CliRun half = hspmc("lint " + plan + " --precision bf16");
  EXPECT_EQ(half.code, 0) << half.output;
  // (A tiny is no "cpu": a GPU's bf16 copies of the parameters would not fit beside the arena.)
  EXPECT_NE(half.output.find("lint: 0 errors, 1 warning"), std::string::npos) << half.output;
  EXPECT_NE(half.output.find("[HS206]"), std::string::npos) << half.output;
  EXPECT_EQ(hspmc("train " + plan + " --data examples/data/gpl-3.txt --steps 1").code, 1);
  CliRun trained = hspmc("train " + plan + " --data examples/data/gpl-3.txt --steps 1 --precision bf16");
  EXPECT_EQ(trained.code, 0) << trained.output;
  EXPECT_EQ(hspmc("simulate " + plan).code, 1);
  CliRun simulated = hspmc("simulate " + plan + " --precision bf16");
  EXPECT_EQ(simulated.code, 0) << simulated.output;
  EXPECT_NE(simulated.output.find("  13.6 MiB"), std::string::npos) << simulated.output; // the bf16 arena's peak
  // The same plan saying `precision bf16` itself: every command takes it, --precision fp32
  // overrides it.
  std::string text = readText(plan);
  text.insert(text.find("  pipeline"), "  precision bf16\n");
  std::ofstream(plan) << text;
  EXPECT_EQ(hspmc("lint " + plan).code, 0);
  CliRun own = hspmc("train " + plan + " --data examples/data/gpl-3.txt --steps 1");
  EXPECT_EQ(own.code, 0) << own.output;
  EXPECT_NE(own.output.find("(threads, bf16)"), std::string::npos) << own.output;
  EXPECT_EQ(hspmc("simulate " + plan).code, 0);
  EXPECT_EQ(hspmc("lint " + plan + " --precision fp32").code, 1);
  EXPECT_EQ(hspmc("train " + plan + " --data examples/data/gpl-3.txt --steps 1 --precision fp32").code, 1);
  std::filesystem::remove("build/cli_bf16_small.toml");
  std::filesystem::remove(plan);
}

// docs/runtime.md: a short run prints its progress and summary; a missing data file is an
// error with exit status 1.
TEST(Cli, TrainRunsAndReportsBadData) {
  CliRun run = hspmc("train examples/gpt/plans/tp2.hspmd --data examples/data/gpl-3.txt --steps 2");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("training TinyGPT under plan 'tp2' on 2 devices (threads), 8 x 64 tokens per step"),
            std::string::npos)
      << run.output;
  // Small initial weights predict nearly uniformly over 256 bytes: the first loss is near ln 256 = 5.545.
  const size_t first = run.output.find("step 1/2  loss ");
  ASSERT_NE(first, std::string::npos) << run.output;
  EXPECT_NEAR(std::stod(run.output.substr(first + 15)), std::log(256.0), 0.1);
  EXPECT_NE(run.output.find("step 2/2  loss "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("device  busy       communicating  idle"), std::string::npos) << run.output;
  CliRun missing = hspmc("train examples/gpt/plans/single.hspmd --data missing.txt");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.output.find("hspmc train: error: missing.txt: cannot open the data file\n"), std::string::npos)
      << missing.output;
}

// A file that holds the model and its plan is a plan file to every command (train, simulate and
// dump-program used to ask for --plan).
TEST(Cli, AFileWithModelAndPlanIsAPlanFile) {
  const std::string file = "build/cli_model_and_plan.hspmd";
  std::ofstream(file) << "import \"nn\"\n"
                         "model Mine = GPT(vocab = 256, d = 32, heads = 2, layers = 2, ffn = 64)\n"
                         "plan mine for Mine {\n"
                         "  cluster \"../examples/clusters/cpu4.toml\"\n"
                         "  bind B = 4, S = 32\n"
                         "  pipeline a {\n"
                         "    stage devices [0, 1] tp 2 layers blocks with wte, lnf\n"
                         "  }\n"
                         "}\n";
  CliRun train = hspmc("train " + file + " --data examples/data/gpl-3.txt --steps 1");
  EXPECT_EQ(train.code, 0) << train.output;
  EXPECT_NE(train.output.find("training Mine under plan 'mine' on 2 devices (threads), 4 x 32 tokens per step"),
            std::string::npos)
      << train.output;
  CliRun simulate = hspmc("simulate " + file);
  EXPECT_EQ(simulate.code, 0) << simulate.output;
  CliRun program = hspmc("dump-program " + file + " --device 1");
  EXPECT_EQ(program.code, 0) << program.output;
  EXPECT_NE(program.output.find("device 1"), std::string::npos) << program.output;
}

// An input that is not a file (a pipe here; /dev/zero alike) is refused where it is named,
// before it is opened: before, opening a pipe waited for a writer and reading /dev/zero never
// ended, so each of these hung. (Each run has a deadline, so that a regression fails.)
TEST(Cli, InputsThatAreNotFilesAreRefused) {
  const std::string fifo = "build/cli_input_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string why = ": it is not a regular file (a device or a pipe: inputs are read whole, from files)\n";
  const std::string plan = "examples/gpt/plans/single.hspmd", data = " --data examples/data/gpl-3.txt";
  auto run = [](const std::string &args) { return shell("timeout 60 " + std::string(HSPMC_PATH) + " " + args); };
  CliRun r = run("lint " + fifo);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, fifo + ": error: cannot read '" + fifo + "'" + why + "lint: 1 error, 0 warnings\n");
  r = run("lint " + plan + " --cluster " + fifo);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find(fifo + ": error: cannot read '" + fifo + "'" + why), std::string::npos) << r.output;
  for (const std::string &args :
       {"train " + plan + " --data " + fifo + " --steps 1", "train " + plan + data + " --load " + fifo + " --steps 1",
        "train " + plan + data + " --fault-trace " + fifo + " --steps 1"}) {
    r = run(args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_NE(r.output.find("hspmc train: error: " + fifo + why), std::string::npos) << args << "\n" << r.output;
  }
  r = run("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu4.toml --seq 64 --tokens 256 -o "
          "build/cli_input_plan.hspmd --length-distribution " +
          fifo);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.output, fifo + ": error" + why);
  std::filesystem::remove(fifo);
}

// --documents lays out every step before the run: a run longer than kMostDocumentSteps is an
// error at once (before, --steps 1000000000 took 6.5 GB in 20 s and went on until memory ran
// out).
TEST(Cli, TrainOnDocumentsBoundsTheStepsItLaysOut) {
  expectRunEndingWith("train examples/gpt/plans/docs_medium.hspmd --data examples/data/gpl-3.txt --documents "
                      "--steps 1000001",
                      1,
                      "\nhspmc train: error: --documents lays out the documents of every step from the first "
                      "before the run starts: at most 1000000 steps in all (this run ends at step 1000001)\n");
}

// A checkpoint's step plus --steps must stay an int64 step number (before, it overflowed: the
// progress line read "step 2/-9223372036854775808").
TEST(Cli, TrainStepNumbersStayWithinInt64) {
  const std::string train = "train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt ";
  ASSERT_EQ(hspmc(train + "--steps 1 --save build/cli_int64_steps.ckpt").code, 0);
  expectRunEndingWith(train + "--steps 9223372036854775807 --load build/cli_int64_steps.ckpt", 1,
                      "hspmc train: error: --steps 9223372036854775807 after the checkpoint's step 1 passes the "
                      "largest step number (9223372036854775807)\n");
}

// The files a run writes are checked before it trains (before: a run trained to its end and
// then failed to write its checkpoint). A checkpoint is renamed onto its path, so a path that
// is not a regular file is refused for --save (as root, --save /dev/null replaced /dev/null).
TEST(Cli, TrainChecksItsOutputsBeforeTraining) {
  const std::string train = "train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 2 ";
  expectRun(train + "--save build/no_such_folder/c.ckpt", 1,
            "hspmc train: error: cannot write build/no_such_folder/c.ckpt (--save): the directory "
            "'build/no_such_folder' does not exist\n");
  expectRun(train + "--losses build", 1, "hspmc train: error: cannot write build (--losses): it is a directory\n");
  const std::string fifo = "build/cli_train_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectRun(train + "--save " + fifo, 1,
            "hspmc train: error: cannot write build/cli_train_fifo (--save): it is not a regular file, "
            "and a checkpoint replaces the file at its path\n");
  EXPECT_TRUE(std::filesystem::is_fifo(fifo)); // still the pipe
  std::filesystem::remove(fifo);
  // A file where a directory of the path should be (it said the directory did not exist).
  const std::string file = "build/cli_a_file";
  std::ofstream(file) << "x";
  expectRun(train + "--losses " + file + "/l.txt", 1,
            "hspmc train: error: cannot write build/cli_a_file/l.txt (--losses): 'build/cli_a_file' is not a "
            "directory\n");
  expectRun("build examples/gpt/plans/single.hspmd --no-compile -o " + file + "/out", 1,
            "hspmc build: error: cannot create the directory build/cli_a_file/out: Not a directory\n");
  std::filesystem::remove(file);
}

// A full disk is an error for every output (/dev/full: each write fails with ENOSPC). The
// streams are flushed before they are asked: before, `--losses /dev/full`, `--trace /dev/full`
// and `hspmc lint ... > /dev/full` exited 0, having written nothing.
TEST(Cli, AFullDiskIsAnErrorForEveryOutput) {
  if (!std::filesystem::exists("/dev/full"))
    GTEST_SKIP() << "this machine has no /dev/full";
  const std::string train = "train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 1 ";
  expectRunEndingWith(train + "--losses /dev/full", 1,
                      "hspmc train: error: /dev/full: cannot write the losses (No space left on device)\n");
  expectRunEndingWith(train + "--trace /dev/full", 1,
                      "hspmc train: error: /dev/full: cannot write the trace (No space left on device)\n");
  expectRunEndingWith("simulate examples/gpt/plans/single.hspmd --trace /dev/full", 1,
                      "hspmc simulate: error: /dev/full: cannot write the trace (No space left on device)\n");
  // Standard output: what lint prints fits the stream's buffer, so the error shows when it is
  // flushed at the end; dump-ir's does not, and its first failed write was long before.
  const CliRun lint = shell("(" + std::string(HSPMC_PATH) + " lint examples/gpt/plans/single.hspmd > /dev/full)");
  EXPECT_EQ(lint.code, 1);
  EXPECT_EQ(lint.output, "hspmc: error: cannot write the standard output (No space left on device)\n");
  const CliRun dump = shell("(" + std::string(HSPMC_PATH) + " dump-ir examples/gpt/plans/single.hspmd > /dev/full)");
  EXPECT_EQ(dump.code, 1);
  EXPECT_EQ(dump.output.rfind("hspmc: error: cannot write the standard output (", 0), 0u) << dump.output;
}

// Under mpirun, a world size other than the plan's device count is an error, not a hang.
TEST(Cli, TrainOnMpiChecksTheWorldSize) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  CliRun run = hspmcUnderMpirun(
      2, "train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --steps 2 --backend mpi");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.code, 124) << "timed out";
  const std::string said = "hspmc train: error: mpirun started 2 processes but the plan has 4 devices: run it with "
                           "mpirun -np 4\n";
  EXPECT_NE(run.output.find(said), std::string::npos) << run.output;
  // Said once, by the first process, not once per process.
  EXPECT_EQ(run.output.find(said), run.output.rfind(said)) << run.output;
  // The right size trains, and --trace gathers both processes' events into one file.
  const std::string trace = "build/cli_mpi_trace.json";
  std::remove(trace.c_str());
  CliRun traced = hspmcUnderMpirun(2, "train examples/gpt/plans/pipeline2.hspmd --data examples/data/gpl-3.txt "
                                      "--steps 1 --backend mpi --trace " +
                                          trace);
  EXPECT_EQ(traced.code, 0) << traced.output;
  std::ifstream in(trace);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"name\":\"device 0\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"device 1\""), std::string::npos);
}

// hspmc passes prints the pass table, one pass a line in order; --after takes every name, and
// after a program pass prints the DevicePrograms.
TEST(Cli, PassesAndDumpAfterAProgramPass) {
  CliRun passes = hspmc("passes");
  EXPECT_EQ(passes.code, 0);
  EXPECT_EQ(passes.output.rfind("autodiff ", 0), 0u) << passes.output;
  EXPECT_EQ(std::count(passes.output.begin(), passes.output.end(), '\n'), 11) << passes.output;
  EXPECT_NE(passes.output.find("\nverify-programs "), std::string::npos) << passes.output;
  CliRun dump = hspmc("dump-ir examples/gpt/plans/tp2.hspmd --train --after verify-programs");
  EXPECT_EQ(dump.code, 0) << dump.output.substr(0, 400);
  EXPECT_EQ(dump.output.rfind("program device 0 plan 0 peak ", 0), 0u) << dump.output.substr(0, 400);
  EXPECT_NE(dump.output.find("\nprogram device 1 plan 0 peak "), std::string::npos);
  CliRun unknown = hspmc("dump-ir examples/gpt/plans/tp2.hspmd --after frobnicate");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
}

// One gate: every command that compiles a plan runs lint's checks first. Three micro-batches
// do not divide a batch of 8 (docs/lint.md's HS110 example): train (which trained it to a
// wrong loss), simulate, build and dump-program stop with lint's diagnostic and exit status 1.
TEST(Cli, EveryCommandThatCompilesAPlanChecksItFirst) {
  const std::string plan = "tests/lint/hs110_microbatches.hspmd";
  const std::string diagnostic = plan +
                                 ":7:27: error: 3 micro-batches do not divide pipeline 'a''s batch of 8 [HS110]\n"
                                 "    pipeline a microbatches 3 {\n"
                                 "                            ^\n";
  for (const std::string &command :
       {"train " + plan + " --data examples/data/gpl-3.txt --steps 1", "simulate " + plan,
        "build " + plan + " -o build/cli_gate --no-compile", "dump-program " + plan + " --device 0 --train"}) {
    CliRun run = hspmc(command);
    EXPECT_EQ(run.code, 1) << command << "\n" << run.output;
    EXPECT_NE(run.output.find(diagnostic), std::string::npos) << command << "\n" << run.output;
    EXPECT_EQ(run.output.find("warning"), std::string::npos) << command << ": lint's warnings are lint's to print";
    EXPECT_EQ(run.output.find("step 1/1"), std::string::npos) << command;
  }
}

// ... and every shipped plan passes it: each lints without an error and trains two steps to
// the losses of the same model on one device. The cluster-scale plans train their own model
// made narrow (the heads, the layers and every device, stage, share and micro-batch of the
// plan kept; width 4 per head, FFN 64, vocabulary 256, 32 positions or 64 where a cp group
// splits them); the tiny ones as they are.
TEST(Cli, EveryShippedPlanLintsCleanAndTrainsAsOneDevice) {
  const std::map<std::string, std::string> narrow = {{"Llama2_7B", "(d = 128, ffn = 64, vocab = 256)"},
                                                     {"Llama2_13B", "(d = 160, ffn = 64, vocab = 256)"},
                                                     {"Llama32B", "(d = 160, ffn = 64, vocab = 256)"}};
  const std::string data = " --data examples/data/gpl-3.txt --steps 2 --losses ";
  CliRun list = shell("ls examples/*/plans/*.hspmd");
  std::istringstream plans(list.output);
  std::string path;
  int checked = 0, trained = 0;
  std::map<std::string, std::vector<double>> singles; // one device's losses, by its plan
  while (std::getline(plans, path)) {
    SCOPED_TRACE(path);
    CliRun lint = hspmc("lint " + path);
    EXPECT_EQ(lint.code, 0) << lint.output;
    EXPECT_NE(lint.output.find("lint: 0 errors"), std::string::npos) << lint.output;
    ++checked;
    // The plan as it trains here: `for M {` becomes `for M(narrow) {`, S and its shares shrink.
    std::string text = readText(path);
    const size_t forAt = text.find(" for ", text.find("\nplan "));
    const size_t brace = text.find(" {", forAt);
    ASSERT_NE(brace, std::string::npos);
    const std::string model = text.substr(forAt + 5, brace - forAt - 5);
#ifdef HSPMD_SANITIZED
    continue; // minutes under the sanitizers: the normal build trains them (TrainTest trains there)
#endif
    if (narrow.count(model)) {
      text.insert(brace, narrow.at(model));
      const size_t s = text.find("S = ");
      ASSERT_NE(s, std::string::npos);
      const size_t digits = text.find_first_not_of("0123456789", s + 4);
      text.replace(s + 4, digits - s - 4, text.find(" cp [") != std::string::npos ? "64" : "32");
    }
    // Written beside the plan in a copy of examples/ (its imports and cluster are relative):
    // files written in examples/ itself were seen, half written, by the tests that read every
    // plan there while ctest runs them beside this one.
    const std::string copy = "build/cli_shipped_examples";
    if (checked == 1) { // a fresh copy, once
      std::filesystem::remove_all(copy);
      std::filesystem::copy("examples", copy, std::filesystem::copy_options::recursive);
    }
    const std::string dir = copy + std::filesystem::path(path).parent_path().string().substr(8);
    const std::string planned = dir + "/cli_shipped.hspmd", single = dir + "/cli_shipped_single.hspmd";
    std::ofstream(planned) << text;
    // The same model, bindings and optimizer on device 0 alone.
    const std::string with = text.find("GPT") != std::string::npos ? "wte, lnf" : "embed, norm, head";
    size_t layout = text.size();
    for (const char *first : {"\n  pipeline ", "\n  annotate ", "\n  reshard "})
      layout = std::min(layout, text.find(first));
    // (Runs of one device are the same for plans of one model, batch and optimizer: once each.
    // One device holds one copy of the state: `zero replicas R` is plain `zero` there.)
    std::string head = text.substr(0, layout);
    if (const size_t replicas = head.find("\n  zero replicas "); replicas != std::string::npos)
      head.erase(replicas + 7, head.find('\n', replicas + 1) - replicas - 7);
    const std::string singleText =
        head + "\n  pipeline one microbatches 1 {\n    stage devices [0] layers blocks with " + with + "\n  }\n}\n";
    const std::string key = singleText.substr(singleText.find(" for ", singleText.find("\nplan ")));
    if (!singles.count(key)) {
      std::ofstream(single) << singleText;
      CliRun one = hspmc("train " + single + data + "build/cli_shipped_single.json");
      std::filesystem::remove(single);
      ASSERT_EQ(one.code, 0) << one.output;
      singles[key] = lossesOf("build/cli_shipped_single.json");
    }
    CliRun many = hspmc("train " + planned + data + "build/cli_shipped.json");
    std::filesystem::remove(planned);
    ASSERT_EQ(many.code, 0) << many.output;
    const std::vector<double> got = lossesOf("build/cli_shipped.json"), want = singles.at(key);
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(want.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4 * want[i]) << "step " << i + 1;
    ++trained;
  }
  EXPECT_GE(checked, 28);
#ifndef HSPMD_SANITIZED
  EXPECT_EQ(trained, checked);
#endif
}

// A checkpoint saved on MPI (every process's regions, gathered by the first device's process)
// loads under another plan on threads and goes on as the run that never stopped.
TEST(Cli, MpiCheckpointContinuesUnderAnotherPlan) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  const std::string data = " --data examples/data/gpl-3.txt", checkpoint = "build/cli_mpi_checkpoint.bin";
  CliRun straight = hspmc("train examples/gpt/plans/dp2_zero.hspmd" + data + " --steps 4 --losses build/cli_a.json");
  ASSERT_EQ(straight.code, 0) << straight.output;
  CliRun saved = hspmcUnderMpirun(4, "train examples/gpt/plans/hetero4.hspmd" + data +
                                         " --steps 2 --backend mpi --losses build/cli_b.json --save " + checkpoint);
  ASSERT_EQ(saved.code, 0) << saved.output;
  CliRun loaded = hspmc("train examples/gpt/plans/dp2_zero.hspmd" + data +
                        " --steps 2 --losses build/cli_c.json --load " + checkpoint);
  ASSERT_EQ(loaded.code, 0) << loaded.output;
  EXPECT_NE(loaded.output.find("step 4/4  loss "), std::string::npos) << loaded.output;
  const std::vector<double> a = lossesOf("build/cli_a.json"), b = lossesOf("build/cli_b.json"),
                            c = lossesOf("build/cli_c.json");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 2u);
  ASSERT_EQ(c.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(b[i], a[i], 1e-5 * a[i]) << "step " << i + 1;
    EXPECT_NEAR(c[i], a[i + 2], 1e-5 * a[i + 2]) << "step " << i + 3;
  }
}

// The ```switch example of docs/runtime.md runs as shown: the switch line, and the losses of
// the run that never switched.
TEST(Cli, TheSwitchingExampleOfTheDocsRuns) {
  const std::string args = docsCommand("runtime.md", "switch");
  ASSERT_FALSE(args.empty());
  CliRun switched = hspmc(args + " --losses build/cli_switch_a.json");
  ASSERT_EQ(switched.code, 0) << switched.output;
  EXPECT_NE(switched.output.find("\nswitched to plan 'hetero4' before step 3: compiled in "), std::string::npos)
      << switched.output;
  EXPECT_NE(switched.output.find(" (6 messages; 3.83 MiB kept in place)\nstep 3/4  loss 5.1806"), std::string::npos)
      << switched.output;
  const std::string straight = args.substr(0, args.find(" --switch"));
  ASSERT_EQ(hspmc(straight + " --losses build/cli_switch_b.json").code, 0);
  expectSameLosses("build/cli_switch_a.json", "build/cli_switch_b.json", 4, "the docs' switch");
}

// The ```elastic example of docs/elastic.md runs as shown: the recovery line, and the losses
// of the lines shown.
TEST(Cli, TheElasticExampleOfTheDocsRuns) {
  const std::string args = docsCommand("elastic.md", "elastic");
  ASSERT_FALSE(args.empty());
  CliRun run = hspmc(args);
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("\nstep 2/4  loss 5.3465 "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\ndevice 3 died at the start of its forward pass of step 3; devices 0, 1, 2 agreed in "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("; recovered onto plan 'pipeline2_recompute': transfer planned in "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(" ms, moved 2.26 MiB in "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" (2 messages; 2.64 MiB kept in place); step 3 is run again\nstep 3/4  loss 5.1806 "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("\nstep 4/4  loss 5.0999 "), std::string::npos) << run.output;
  // The same on MPI, where the device is a process that dies.
  if (std::system("command -v mpirun > /dev/null") != 0)
    return;
  const std::string mpi = docsCommand("elastic.md", "elastic-mpi");
  ASSERT_FALSE(mpi.empty());
  CliRun processes = hspmcStartingMpirun(mpi);
  ASSERT_EQ(processes.code, 0) << processes.output;
  EXPECT_NE(processes.output.find("\nhspmc train: device 3 died at the start of its forward pass of step 3 (--fail): "
                                  "its process kills itself (SIGKILL)\n"),
            std::string::npos)
      << processes.output;
  EXPECT_NE(processes.output.find("\ndevice 3 stopped answering (no heartbeat for 1 s); devices 0, 1, 2 agreed in "),
            std::string::npos)
      << processes.output;
  EXPECT_NE(processes.output.find(" (2 messages; 2.64 MiB kept in place); step 3 is run again\nstep 3/4  loss 5.1806 "),
            std::string::npos)
      << processes.output;
  EXPECT_NE(processes.output.find("\nstep 4/4  loss 5.0999 "), std::string::npos) << processes.output;
}

// A switch back to a plan the run has used compiles nothing; bad switches are errors before
// anything trains.
TEST(Cli, SwitchesAreCachedAndCheckedBeforeTraining) {
  const std::string gpt = "examples/gpt/plans/", data = " --data examples/data/gpl-3.txt";
  CliRun back = hspmc("train " + gpt + "dp2_zero.hspmd" + data + " --steps 5 --switch 2:" + gpt +
                      "hetero4.hspmd --switch 4:" + gpt + "dp2_zero.hspmd");
  ASSERT_EQ(back.code, 0) << back.output;
  EXPECT_NE(back.output.find("switched to plan 'dp2_zero' before step 4: cached, transfer planned in "),
            std::string::npos)
      << back.output;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--steps 4 --switch 9:" + gpt + "hetero4.hspmd",
       "hspmc train: error: --switch 9:" + gpt + "hetero4.hspmd: step 9 is beyond the run (--steps 4)\n"},
      // A step past int64 is past the run too (it said "expected STEP:PLAN").
      {"--steps 4 --switch 9223372036854775808:" + gpt + "hetero4.hspmd",
       "hspmc train: error: --switch 9223372036854775808:" + gpt +
           "hetero4.hspmd: step 9223372036854775808 is beyond the run (--steps 4)\n"},
      {"--steps 4 --switch -9223372036854775809:" + gpt + "hetero4.hspmd",
       "hspmc train: error: --switch -9223372036854775809:" + gpt +
           "hetero4.hspmd: expected STEP:PLAN, a step from 1 and a plan file\n"},
      {"--steps 4 --switch x:" + gpt + "hetero4.hspmd",
       "hspmc train: error: --switch x:" + gpt + "hetero4.hspmd: expected STEP:PLAN, a step from 1 and a plan file\n"},
      {"--steps 4 --switch 2:examples/llama/plans/tiny_llama_single.hspmd",
       "hspmc train: error: --switch 2:examples/llama/plans/tiny_llama_single.hspmd: plan 'tiny_single' cannot "
       "continue this run: it trains TinyLLaMA with other parameters than TinyGPT under plan 'dp2_zero'\n"},
      {"--steps 4 --switch 2:" + gpt + "cp_asym.hspmd",
       "hspmc train: error: --switch 2:" + gpt +
           "cp_asym.hspmd: plan 'cp_asym' cannot continue this run: its batch "
           "is 4 x 66, plan 'dp2_zero''s 8 x 64\n"},
      {"--steps 4 --switch 2:" + gpt + "dp2_zero.hspmd",
       "hspmc train: error: --switch 2:" + gpt + "dp2_zero.hspmd: the run is already under plan 'dp2_zero' then\n"},
      {"--steps 4 --switch 2:tests/switch/hetero4_tiny.hspmd",
       "hspmc train: error: --switch 2:tests/switch/hetero4_tiny.hspmd: device 0 needs 13.8 MiB during the switch "
       "even moving in 10 buckets by layer (its old arena, 9.9 MiB, beside its state packed out of it, 3.9 MiB), "
       "but a cpu_small has 12.0 MiB\n"},
      {"--steps 4 --switch 3:" + gpt + "hetero4.hspmd --switch 2:" + gpt + "single.hspmd",
       "hspmc train: error: --switch 2:" + gpt +
           "single.hspmd: switches go in step order, one per step (the "
           "previous one is before step 3)\n"}};
  for (const auto &[options, message] : cases) {
    CliRun run = hspmc("train " + gpt + "dp2_zero.hspmd" + data + " " + options);
    EXPECT_EQ(run.code, 1) << options;
    EXPECT_EQ(run.output, message);
  }
  // After a checkpoint the run's steps start later: a switch before them would never happen.
  ASSERT_EQ(hspmc("train " + gpt + "dp2_zero.hspmd" + data + " --steps 2 --save build/cli_switch.ckpt").code, 0);
  CliRun loaded = hspmc("train " + gpt + "dp2_zero.hspmd" + data +
                        " --steps 2 --load build/cli_switch.ckpt --switch 2:" + gpt + "hetero4.hspmd");
  EXPECT_EQ(loaded.code, 1);
  EXPECT_NE(loaded.output.find("\nhspmc train: error: a switch before step 2 is outside this run (steps 3 to 4, after "
                               "the 2 steps of the checkpoint loaded)\n"),
            std::string::npos)
      << loaded.output;
  CliRun never =
      hspmc("train " + gpt + "dp2_zero.hspmd" + data +
            " --steps 2 --load build/cli_switch.ckpt --switch 99999999999999999999:" + gpt + "hetero4.hspmd");
  EXPECT_EQ(never.code, 1);
  EXPECT_EQ(never.output, "hspmc train: error: --switch 99999999999999999999:" + gpt +
                              "hetero4.hspmd: step 99999999999999999999 is beyond any run (its steps end at "
                              "9223372036854775807)\n");
  // +3 is step 3, as --steps takes +3.
  EXPECT_EQ(hspmc("train " + gpt + "dp2_zero.hspmd" + data + " --steps 3 --switch +3:" + gpt + "hetero4.hspmd").code,
            0);
}

// A model file where an option takes a plan names the option; before, every one said
// "train needs a plan (--plan PLAN)", an option the user had not given.
TEST(Cli, AFileWithoutAPlanWhereAPlanIsTakenNamesTheOption) {
  const std::string plan = "examples/gpt/plans/dp2_zero.hspmd", model = "examples/gpt/tiny_gpt.hspmd",
                    data = " --data examples/data/gpl-3.txt --steps 3";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train " + plan + data + " --switch 2:" + model, "--switch"},
      {"train " + plan + data + " --recover " + model, "--recover"},
      {"simulate " + plan + " --fault-trace tests/elastic/dies_twice.trace --recover " + model, "--recover"},
      {"build " + plan + " --also " + model + " -o build/cli_also_model", "--also"},
      {"explain-switch " + plan + " " + model, "explain-switch"},
      {"explain-switch " + model + " " + plan, "explain-switch"},
      {"train build/cli_model_in_set.planset.toml --documents" + data, "a plan set"}};
  std::ofstream("build/cli_model_in_set.planset.toml")
      << "plans = [\"../examples/gpt/plans/docs_short.hspmd\", \"../" << model << "\"]\n";
  for (const auto &[command, option] : cases) {
    const CliRun run = hspmc(command);
    EXPECT_EQ(run.code, 1) << command;
    EXPECT_NE(run.output.find(model + ": error: " + option + " takes a plan file; this file defines no plan\n"),
              std::string::npos)
        << command << "\n"
        << run.output;
  }
  // The command's own file keeps its advice.
  EXPECT_EQ(hspmc("train " + model + data).output, model + ": error: train needs a plan (--plan PLAN)\n");
}

// Where the old and new arenas do not fit a device side by side (hetero4_small's 14 MiB
// devices), the switch moves in buckets by layer and says so; the losses are those of the run
// that never switched.
TEST(Cli, ASwitchThatDoesNotFitSideBySideMovesInBuckets) {
  const std::string run = "train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 3";
  CliRun switched = hspmc(run + " --switch 2:tests/switch/hetero4_small.hspmd --losses build/cli_buckets_a.json");
  ASSERT_EQ(switched.code, 0) << switched.output;
  EXPECT_NE(switched.output.find(" in 10 buckets by layer (the old and new arenas do not fit side by side), moved "
                                 "5.77 MiB in "),
            std::string::npos)
      << switched.output;
  EXPECT_NE(switched.output.find(" (40 messages; 3.83 MiB kept in place)\nstep 2/3"), std::string::npos)
      << switched.output;
  ASSERT_EQ(hspmc(run + " --losses build/cli_buckets_b.json").code, 0);
  expectSameLosses("build/cli_buckets_a.json", "build/cli_buckets_b.json", 3, "in buckets");
}

// A device that dies (--fail) is survived: the others agree, move the state from their copies
// to the first --recover plan whose devices are all alive, and redo the interrupted step. The
// losses are those of the run without the failure, step for step; with --save the state is
// saved from the plan recovered onto. Each phase: forward, backward (the first device, which
// gathers the losses, dies), update, during a switch; the tiny GPT and the tiny LLaMA; from
// ZeRO; a fault trace with two deaths; a device that dies and comes back.
// Runs that lose devices and go on (docs/elastic.md): the plan, the options, and the start of
// the line that says so on threads; `comesBack`: a device comes back (on MPI a spare process
// takes its place).
struct ElasticCase {
  std::string plan, options, line;
  bool comesBack = false;
};
std::vector<ElasticCase> elasticCases() {
  const std::string gpt = "examples/gpt/plans/", llama = "examples/llama/plans/";
  return {
      {gpt + "hetero4.hspmd", "--steps 4 --fail 3:3 --recover " + gpt + "pipeline2_recompute.hspmd",
       "\ndevice 3 died at the start of its forward pass of step 3; devices 0, 1, 2 agreed in "},
      {gpt + "dp2_tp2.hspmd",
       "--steps 3 --fail 2:0@backward --recover " + gpt + "tp2.hspmd --recover tests/elastic/pipeline2_on_1_2.hspmd",
       "\ndevice 0 died at the start of its backward pass of step 2; devices 1, 2, 3 agreed in "},
      {gpt + "dp2_zero.hspmd",
       "--steps 4 --switch 3:" + gpt + "hetero4.hspmd --fail 3:3@switch --recover " + gpt + "pipeline2_recompute.hspmd",
       "\ndevice 3 died at the start of the switch before step 3; devices 0, 1, 2 agreed in "},
      {llama + "tiny_llama_hetero4.hspmd",
       "--steps 3 --fail 2:2@backward --recover " + llama + "tiny_llama_dp2_zero.hspmd",
       "\ndevice 2 died at the start of its backward pass of step 2; devices 0, 1, 3 agreed in "},
      {gpt + "hetero4.hspmd", "--steps 4 --fail 2:3@update --recover " + gpt + "pipeline2_recompute.hspmd",
       "\ndevice 3 died at the start of its update of step 2; devices 0, 1, 2 agreed in "},
      {gpt + "hetero4.hspmd",
       "--steps 5 --fault-trace tests/elastic/two_deaths.trace --recover tests/elastic/dp2_on_0_2.hspmd --recover " +
           gpt + "single.hspmd",
       "\ndevice 2 died at the start of its backward pass of step 4; devices 0, 1 agreed in "},
      {gpt + "hetero4.hspmd",
       "--steps 5 --fault-trace tests/elastic/death_and_return.trace --recover " + gpt + "hetero4.hspmd --recover " +
           gpt + "pipeline2_recompute.hspmd",
       "\ndevice 3 joined again before step 4; devices 0, 1, 2, 3 agreed in ", true},
      // Two deaths and a return: the return goes on under the first plan that uses it.
      {gpt + "hetero4.hspmd",
       "--steps 6 --fault-trace tests/elastic/two_deaths_one_return.trace --recover tests/elastic/dp2_on_0_3.hspmd "
       "--recover tests/elastic/dp2_on_0_2.hspmd --recover " +
           gpt + "single.hspmd",
       "\ndevice 3 joined again before step 5; devices 0, 1, 3 agreed in ", true},
      // A second death during the first recovery's move: the survivors agree again.
      {gpt + "hetero4.hspmd",
       "--steps 5 --fault-trace tests/elastic/death_in_recovery.trace --recover tests/elastic/dp2_on_0_2.hspmd "
       "--recover " +
           gpt + "single.hspmd",
       "\ndevice 2 died at the start of the move of the recovery before step 3; device 3 died at the start of its "
       "forward pass of step 3; devices 0, 1 agreed in "},
      // ZeRO that survives: `zero replicas 2` keeps each share of the state on two devices
      // (data-parallel copies; pipelines that each hold a whole copy).
      {gpt + "dp4_zero_replicas.hspmd", "--steps 4 --fail 3:1@backward --recover tests/elastic/dp2_on_0_2.hspmd",
       "\ndevice 1 died at the start of its backward pass of step 3; devices 0, 2, 3 agreed in "},
      {llama + "tiny_llama_pipelines_zero_replicas.hspmd",
       "--steps 3 --fail 2:3 --recover " + llama + "tiny_llama_dp2_zero.hspmd",
       "\ndevice 3 died at the start of its forward pass of step 2; devices 0, 1, 2 agreed in "},
      // --recover auto: the planner plans for the live devices, twice.
      {llama + "tiny_llama_hetero4.hspmd", "--steps 5 --fault-trace tests/elastic/two_deaths.trace --recover auto",
       "\ndevice 2 died at the start of its backward pass of step 4; devices 0, 1 agreed in "}};
}

// After the trace of two deaths with --recover auto: the plans the planner made for the live
// devices, each written and compiled; the second keeps a copy of the state on each device.
void expectReplanned(const std::string &output) {
  for (const std::string plan : {"auto_0_1_2", "auto_0_1"}) {
    const size_t at = output.find("recovered onto plan '" + plan + "' (planned for them in ");
    ASSERT_NE(at, std::string::npos) << output;
    const size_t path = output.find(": ", output.find(" compiled in ", at)) + 2;
    const std::string file = output.substr(path, output.find(')', path) - path);
    EXPECT_EQ(file.substr(file.rfind('/') + 1), plan + ".hspmd") << output;
    const std::string text = readText(file);
    EXPECT_NE(text.find("plan " + plan + " for TinyLLaMA {"), std::string::npos) << text;
    EXPECT_EQ(text.find("\n  zero\n"), std::string::npos) << text; // a later death loses no part
    EXPECT_EQ(hspmc("lint " + file).code, 0) << file;
  }
}

// The run of `c` without its failures, for comparison: its losses in `path`.
void trainWithoutFailures(const ElasticCase &c, const std::string &path) {
  const std::string steps = c.options.substr(0, c.options.find(" --", 2));
  ASSERT_EQ(hspmc("train " + c.plan + " --data examples/data/gpl-3.txt " + steps + " --losses " + path).code, 0);
}
size_t stepsOf(const ElasticCase &c) {
  return static_cast<size_t>(std::stoi(c.options.substr(c.options.find(' ') + 1)));
}

TEST(Cli, ARunGoesOnAfterADeviceDies) {
  const std::string gpt = "examples/gpt/plans/", data = " --data examples/data/gpl-3.txt";
  for (const ElasticCase &c : elasticCases()) {
    CliRun run = hspmc("train " + c.plan + data + " " + c.options + " --losses build/cli_elastic_a.json");
    ASSERT_EQ(run.code, 0) << c.options << "\n" << run.output;
    EXPECT_NE(run.output.find(c.line), std::string::npos) << run.output;
    EXPECT_TRUE(run.output.find(" is run again\n") != std::string::npos ||
                run.output.find(" runs\n") != std::string::npos)
        << run.output;
    if (c.options.find("--recover auto") != std::string::npos)
      expectReplanned(run.output);
    if (hspmd::testing::heavyRunsAreOff())
      continue; // the sanitizer run: every failure above; the losses are compared in the normal build
    trainWithoutFailures(c, "build/cli_elastic_b.json");
    expectSameLosses("build/cli_elastic_a.json", "build/cli_elastic_b.json", stepsOf(c), c.options);
  }
  // The state saved after a recovery continues the run: step 4 from it is step 4 of the run.
  ASSERT_EQ(hspmc("train " + gpt + "dp2_tp2.hspmd" + data + " --steps 3 --fail 2:0@backward --recover " +
                  "tests/elastic/pipeline2_on_1_2.hspmd --save build/cli_elastic.ckpt")
                .code,
            0);
  ASSERT_EQ(hspmc("train " + gpt + "hetero4.hspmd" + data +
                  " --steps 1 --load build/cli_elastic.ckpt --losses build/cli_elastic_c.json")
                .code,
            0);
  ASSERT_EQ(hspmc("train " + gpt + "dp2_tp2.hspmd" + data + " --steps 4 --losses build/cli_elastic_d.json").code, 0);
  const std::vector<double> resumed = lossesOf("build/cli_elastic_c.json"),
                            whole = lossesOf("build/cli_elastic_d.json");
  ASSERT_EQ(resumed.size(), 1u);
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_NEAR(resumed[0], whole[3], 1e-5 * whole[3]);
}

// --recover auto in a bf16 run (`--precision bf16` over an fp32 plan): the planner plans for
// the survivors in bf16 and the plan it writes says so.
// The text of the plan a run recovered onto, read from the file the run names ("" if none).
std::string recoveredPlanText(const std::string &output, const std::string &plan) {
  const size_t at = output.find("recovered onto plan '" + plan + "' (planned for them in ");
  if (at == std::string::npos)
    return "";
  const size_t path = output.find(": ", output.find(" compiled in ", at)) + 2;
  return readText(output.substr(path, output.find(')', path) - path));
}

TEST(Cli, RecoverAutoPlansInTheRunsPrecision) {
  CliRun run = hspmc("train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --steps 3 --precision bf16 "
                     "--fail 2:3 --recover auto");
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string text = recoveredPlanText(run.output, "auto_0_1_2");
  EXPECT_NE(text.find("\n  precision bf16\n"), std::string::npos) << run.output << text;
}

// --recover auto on a cluster whose names TOML must quote (a node `lo"c<newline>al`, a type
// `my.cpu`): the survivors' cluster file it writes reads back, and the planner's pipelines,
// named after the type, are names of the language (they were written as `pipeline my.cpu0`).
// The losses are those of the same plan on cpu4 without the failure.
TEST(Cli, RecoverAutoOnAClusterWithNamesToQuote) {
  const std::string options = " --data examples/data/gpl-3.txt --steps 3";
  CliRun run = hspmc("train tests/elastic/hetero4_quoted_names.hspmd" + options + " --fail 2:3 --recover auto");
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string text = recoveredPlanText(run.output, "auto_0_1_2");
  EXPECT_NE(text.find("\n  pipeline my_cpu0 "), std::string::npos) << run.output << text;
  CliRun plain = hspmc("train examples/gpt/plans/hetero4.hspmd" + options);
  ASSERT_EQ(plain.code, 0) << plain.output;
  auto losses = [](const std::string &output) {
    std::string out;
    for (size_t k = output.find(" loss "); k != std::string::npos; k = output.find(" loss ", k + 1))
      out += output.substr(k, 12);
    return out;
  };
  EXPECT_EQ(losses(run.output), losses(plain.output));
  EXPECT_EQ(losses(plain.output).size(), 36u) << plain.output;
}

// --stragglers (docs/elastic.md): device 1 becomes 4x slower at step 6 (a `slow` event); after
// three slow steps in a row the run plans for its measured speed and switches, once; the
// losses are those of the run without it. A device slow for one step only changes nothing.
size_t occurrences(const std::string &text, const std::string &what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}
TEST(Cli, AStragglerIsPlannedAround) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF();
  const std::string args = docsCommand("elastic.md", "elastic-stragglers");
  ASSERT_FALSE(args.empty());
  CliRun run = hspmc(args + " --losses build/cli_straggler_a.json");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("\nstep 8/30  loss 4.8721  "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\ndevice 1 ran "), std::string::npos) << run.output; // about 4x: CPU time varies
  EXPECT_NE(run.output.find("x its usual compute time in steps 6-8 (speed 0."), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("; planned for its speed in "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(": plan 'auto_0_1_2_3_slow_1' ("), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("over the 22 steps left it would save "), std::string::npos) << run.output;
  EXPECT_EQ(occurrences(run.output, " is a straggler; devices 0, 1, 2, 3 agreed in "), 1u) << run.output; // one switch
  EXPECT_NE(run.output.find("\ndevice 1 is a straggler; devices 0, 1, 2, 3 agreed in "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("; step 9 runs\nstep 9/30  loss 4.7471  "), std::string::npos) << run.output;
  ASSERT_EQ(hspmc("train examples/gpt/plans/dp4_zero_replicas.hspmd --data examples/data/gpl-3.txt --steps 30 "
                  "--losses build/cli_straggler_b.json")
                .code,
            0);
  expectSameLosses("build/cli_straggler_a.json", "build/cli_straggler_b.json", 30, "straggler");
  // A flicker: slow in step 6 only.
  CliRun flicker = hspmc("train examples/gpt/plans/dp4_zero_replicas.hspmd --data examples/data/gpl-3.txt --steps 12 "
                         "--fault-trace tests/elastic/flicker.trace --stragglers");
  ASSERT_EQ(flicker.code, 0) << flicker.output;
  EXPECT_NE(flicker.output.find("\ndevice 1 ran "), std::string::npos) << flicker.output;
  EXPECT_NE(flicker.output.find("x its usual compute time in step 6 only: no re-plan (that takes 3 steps in a row)\n"),
            std::string::npos)
      << flicker.output;
  EXPECT_EQ(flicker.output.find(" is a straggler"), std::string::npos) << flicker.output;
  // On MPI the same watch, with a process per device: whether it switches depends on how long
  // four processes take to plan on this machine's cores; either way it says why, and the
  // losses are the same.
  if (std::system("command -v mpirun > /dev/null") != 0)
    return;
  CliRun mpi = hspmcStartingMpirun(args + " --backend mpi --losses build/cli_straggler_mpi.json");
  ASSERT_EQ(mpi.code, 0) << mpi.output;
  EXPECT_NE(mpi.output.find("x its usual compute time in steps 6-8 (speed 0."), std::string::npos) << mpi.output;
  EXPECT_TRUE(mpi.output.find(": switching\ndevice 1 is a straggler; devices 0, 1, 2, 3 agreed in ") !=
                  std::string::npos ||
              mpi.output.find(": the run stays on plan 'dp4_zero_replicas'\n") != std::string::npos)
      << mpi.output;
  expectSameLosses("build/cli_straggler_mpi.json", "build/cli_straggler_b.json", 30, "straggler on MPI");
}

// hspmc simulate --fault-trace (docs/elastic.md): a run over a trace of failures priced on the
// simulated steps of the plans it goes through, in place against checkpoint-and-restart. The
// figures are checked against each other and against `hspmc simulate` of each plan alone.
double numberAfter(const std::string &text, const std::string &label) { // the first number after `label`
  size_t at = text.find(label);
  if (at == std::string::npos)
    return -1;
  at = text.find_first_of("0123456789", at + label.size());
  return at == std::string::npos ? -1 : std::stod(text.substr(at));
}
double simulatedStep(const std::string &plan) {
  CliRun run = hspmc("simulate " + plan);
  return run.code == 0 ? numberAfter(run.output, "step ") / 1e3 : -1; // "step 31.234 ms, ..."
}
TEST(Cli, SimulatingAFaultTracePricesRecoveryAgainstRestarts) {
  const std::string gpt = "examples/gpt/plans/";
  const std::string args = docsCommand("elastic.md", "elastic-simulate");
  ASSERT_NE(args.find("--fault-trace tests/elastic/two_deaths.trace --steps 100 "), std::string::npos) << args;
  ASSERT_NE(args.find(" --restart-seconds 30"), std::string::npos) << args;
  CliRun run = hspmc(args);
  ASSERT_EQ(run.code, 0) << run.output;
  const double hetero4 = simulatedStep(gpt + "hetero4.hspmd"), dp2 = simulatedStep("tests/elastic/dp2_on_0_2.hspmd"),
               single = simulatedStep(gpt + "single.hspmd");
  ASSERT_GT(hetero4, 0);
  // Step 1 under hetero4, steps 2-3 under dp2_on_0_2, steps 4-100 under single.
  const double clean = numberAfter(run.output, "without failures");
  const double inPlace = numberAfter(run.output, "in place ");
  EXPECT_NEAR(clean, 100 * hetero4, 0.05 + 1e-3 * clean) << run.output;
  const double steps = hetero4 + 2 * dp2 + 97 * single;
  // In place: the steps, two detections of 1 s, a third of the interrupted step 4 (backward),
  // compiling and moving (under a second for these plans).
  EXPECT_GT(inPlace, steps + 2.0 + dp2 / 3 - 0.05) << run.output;
  EXPECT_LT(inPlace, steps + 2.0 + dp2 / 3 + 1.0) << run.output;
  EXPECT_NE(run.output.find("2 failures, 0 returns; 'hetero4' "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("; from step 2 'dp2_on_0_2' ("), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("; from step 4 'single' ("), std::string::npos) << run.output;
  // Restarts: each failure restarts (30 s) and redoes the steps since the last checkpoint: none
  // was written before step 4 with either interval (the first at step 10).
  for (const std::string every : {"10", "50"}) {
    const double restarted = numberAfter(run.output, "checkpoint every " + every);
    const std::string rest = run.output.substr(run.output.find("checkpoint every " + every));
    EXPECT_GT(restarted, inPlace + 2 * 30 - 2.0) << run.output;
    EXPECT_NE(rest.find(" (4 steps)\n"), std::string::npos) << run.output; // steps 1 and 1-3 redone
  }
  // Without the copy a ZeRO plan's state cannot be rebuilt in place: said, and the restarts priced.
  CliRun zero = hspmc("simulate " + gpt + "dp2_zero.hspmd --fault-trace tests/elastic/device1_dies.trace --steps 10 " +
                      "--recover " + gpt + "single.hspmd");
  EXPECT_EQ(zero.code, 0) << zero.output;
  EXPECT_NE(zero.output.find("\n  in place: not possible, every copy of a part of the state died: no device of the "
                             "plan switched from holds all of region [32:64] of 'blocks[0].ln1.adam_m' (`zero "
                             "replicas 2` keeps a copy of each share)\n  checkpoint every 10 "),
            std::string::npos)
      << zero.output;
  CliRun replicas =
      hspmc("simulate " + gpt + "dp4_zero_replicas.hspmd --fault-trace tests/elastic/device1_dies.trace " +
            "--steps 10 --recover tests/elastic/dp2_on_0_2.hspmd");
  EXPECT_EQ(replicas.code, 0) << replicas.output;
  EXPECT_GT(numberAfter(replicas.output, "in place "), 0) << replicas.output;
  // Options that need a trace, a trace of `slow` events, a plan list that runs out.
  const std::vector<std::pair<std::string, std::string>> errors = {
      {"simulate " + gpt + "hetero4.hspmd --steps 10", "hspmc simulate: error: --steps needs --fault-trace FILE\n"},
      {"simulate " + gpt + "hetero4.hspmd --fault-trace tests/elastic/straggler.trace --recover " + gpt +
           "single.hspmd",
       "hspmc simulate: error: tests/elastic/straggler.trace: 'slow' events are not simulated (hspmc train "
       "--stragglers runs them)\n"},
      {"simulate " + gpt +
           "hetero4.hspmd --fault-trace tests/elastic/two_deaths.trace --recover "
           "tests/elastic/dp2_on_0_2.hspmd",
       "hspmc simulate: error: tests/elastic/two_deaths.trace: after the failure of device 2 before step 4, no "
       "--recover plan uses only the live devices\n"},
      {"simulate " + gpt + "hetero4.hspmd --fault-trace tests/elastic/two_deaths.trace --format json",
       "hspmc simulate: error: --fault-trace prints text (no --format json)\n"},
      // A recovery plan is checked on the run's cluster, not its own (an internal error once).
      {"simulate " + gpt +
           "hetero4.hspmd --fault-trace tests/elastic/two_deaths.trace --recover "
           "tests/elastic/dp2_on_0_5.hspmd",
       "tests/elastic/dp2_on_0_5.hspmd:14:19: error: device 5 is not in the cluster (cpu4 has devices 0..3) "
       "[HS101]\n"}};
  // The error comes first: the step's report is not printed before it (it was, once).
  for (const auto &[command, message] : errors) {
    CliRun bad = hspmc(command);
    EXPECT_NE(bad.code, 0) << command;
    EXPECT_EQ(bad.output.rfind(message, 0), 0u) << command << "\n" << bad.output;
  }
}

// What a run cannot survive, and malformed --fail options: a clear error, exit status 1.
TEST(Cli, DeathsThatCannotBeSurvivedAreClearErrors) {
  const std::string gpt = "examples/gpt/plans/", data = " --data examples/data/gpl-3.txt --steps 3 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hetero4.hspmd" + data + "--fail 2:1",
       "hspmc train: error: device 1 died at the start of its forward pass of step 2; the run stops (no --recover "
       "plan to go on with)\n"},
      {"dp2_zero.hspmd" + data + "--fail 2:1 --recover " + gpt + "single.hspmd",
       "hspmc train: error: device 1 died at the start of its forward pass of step 2; the survivors (0) cannot rebuild "
       "the state, every copy of a part died: no device of the plan switched from holds all of region [32:64] of "
       "'blocks[0].ln1.adam_m' (with --save FILE --save-every K the run would resume from its last checkpoint)\n"},
      // Both copies of a share (`zero replicas 2`) die in one step.
      {"dp4_zero_replicas.hspmd" + data + "--fail 2:1 --fail 2:3 --recover tests/elastic/dp2_on_0_2.hspmd",
       "hspmc train: error: device 1 died at the start of its forward pass of step 2; device 3 died at the start of "
       "its forward pass of step 2; the survivors (0, 2) cannot rebuild the state, every copy of a part died: no "
       "device of the plan switched from holds all of region [32:64] of 'blocks[0].ln1.adam_m' (with --save FILE "
       "--save-every K the run would resume from its last checkpoint)\n"},
      {"dp2_zero.hspmd" + data + "--save-every 2",
       "hspmc train: error: --save-every 2 needs --save FILE (where to write the checkpoint)\n"},
      {"single.hspmd" + data + "--fail 2:0 --recover " + gpt + "single.hspmd",
       "hspmc train: error: device 0 died at the start of its forward pass of step 2; no device is left to go on\n"},
      {"hetero4.hspmd" + data + "--fail 2:0 --recover " + gpt + "tp2.hspmd",
       "hspmc train: error: device 0 died at the start of its forward pass of step 2; no --recover plan uses only "
       "the live devices (1, 2, 3)\n"},
      {"hetero4.hspmd" + data + "--fail 2",
       "hspmc train: error: --fail 2: expected STEP:DEVICE[@PHASE], a step from "
       "1, a device and a phase (forward, backward, update, switch or recovery)\n"},
      {"hetero4.hspmd" + data + "--fail 2:7",
       "hspmc train: error: --fail 2:7: no device 7 in the run (its devices: 0, 1, 2, 3)\n"},
      {"hetero4.hspmd" + data + "--fail 2:1@sideways",
       "hspmc train: error: --fail 2:1@sideways: no phase 'sideways' (forward, backward, update, switch or "
       "recovery)\n"},
      {"hetero4.hspmd" + data + "--fault-trace tests/elastic/bad.trace",
       "hspmc train: error: tests/elastic/bad.trace:3: no device 9 in the run (its devices: 0, 1, 2, 3)\n"},
      {"hetero4.hspmd" + data + "--fault-trace tests/elastic/join.trace",
       "hspmc train: error: tests/elastic/join.trace:2: device 3 joins before step 3 but has not died before it\n"},
      {"hetero4.hspmd" + data + "--fault-trace tests/elastic/slow.trace",
       "hspmc train: error: tests/elastic/slow.trace:2: expected STEP DEVICE slow FACTOR, a factor from 1 to 1000 "
       "(the device's kernels take FACTOR times as long; 1: its own speed again)\n"},
      {"hetero4.hspmd" + data + "--fault-trace tests/elastic/huge_step.trace",
       "hspmc train: error: tests/elastic/huge_step.trace:2: step 99999999999999999999 is beyond the run (--steps "
       "3)\n"},
      // Numbers past int: before, device 2^32 + 1 was taken for device 1, which died.
      {"hetero4.hspmd" + data + "--fail 2:4294967297",
       "hspmc train: error: --fail 2:4294967297: no device 4294967297 in the run (its devices: 0, 1, 2, 3)\n"},
      {"hetero4.hspmd" + data + "--fail 9223372036854775808:1",
       "hspmc train: error: --fail 9223372036854775808:1: step 9223372036854775808 is beyond the run (--steps 3)\n"},
      {"../../../tests/elastic/dp2_no_cluster.hspmd" + data + "--stragglers",
       "hspmc train: error: --stragglers plans for the run's cluster, but plan 'dp2_no_cluster' names no cluster "
       "file (cluster \"FILE\")\n"},
      {"hetero4.hspmd" + data + "--fail 2:1@switch --recover " + gpt + "tp2.hspmd",
       "hspmc train: error: --fail 2:1@switch: a failure of device 1 at step 2 is at a switch, but the run switches "
       "plans before no "
       "such step\n"},
      {"hetero4.hspmd" + data + "--fail 9:1", "hspmc train: error: --fail 9:1: step 9 is beyond the run (--steps 3)\n"},
      {"hetero4.hspmd" + data + "--fail 2:1@recovery --recover " + gpt + "tp2.hspmd",
       "hspmc train: error: --fail 2:1@recovery: a failure of device 1 at step 2 is in a recovery, but no other "
       "device fails in that "
       "step\n"},
      // A device dies once until it joins again (the second of these used to win silently).
      {"hetero4.hspmd" + data + "--fail 2:1@backward --fail 2:1 --recover auto",
       "hspmc train: error: --fail 2:1@backward: device 1 would die twice, in step 2 (forward, --fail 2:1) and in "
       "step 2 (backward), without joining in between: a dead device cannot fail\n"},
      // ... each death named where it was asked for, from options and a trace together.
      {"hetero4.hspmd" + data + "--fail 3:1 --fault-trace tests/elastic/device1_dies.trace --recover auto",
       "hspmc train: error: --fail 3:1: device 1 would die twice, in step 2 (forward, "
       "tests/elastic/device1_dies.trace:2) and in step 3 (forward), without joining in between: a dead device "
       "cannot fail\n"},
      {"hetero4.hspmd" + data + "--fault-trace tests/elastic/dies_twice.trace --recover auto",
       "hspmc train: error: tests/elastic/dies_twice.trace:3: device 1 would die twice, in step 2 (forward, "
       "tests/elastic/dies_twice.trace:2) and in step 3 (backward), without joining in between: a dead device "
       "cannot fail\n"},
      {"../../../tests/elastic/dp2_no_cluster.hspmd" + data + "--fail 2:1 --recover auto",
       "hspmc train: error: --recover auto plans for the run's cluster, but plan 'dp2_no_cluster' names no cluster "
       "file (cluster \"FILE\")\n"}};
  for (const auto &[options, message] : cases) {
    CliRun run = hspmc("train " + gpt + options);
    EXPECT_EQ(run.code, 1) << options;
    const size_t at = run.output.find("hspmc train: error:");
    EXPECT_EQ(at == std::string::npos ? run.output : run.output.substr(at), message) << options;
  }
  // Re-planning writes its plans in the temporary folder: a $TMPDIR that is none is said before
  // training (it was "internal error: filesystem error"; then the folder was made).
  for (const auto &[option, name] : std::vector<std::pair<std::string, std::string>>{
           {"--fail 2:1 --recover auto", "--recover auto"}, {"--stragglers", "--stragglers"}}) {
    CliRun run = shell("TMPDIR=build/cli_no_such_folder " + std::string(HSPMC_PATH) + " train " + gpt +
                       "hetero4.hspmd" + data + option);
    EXPECT_EQ(run.code, 1) << run.output;
    EXPECT_EQ(run.output, "hspmc train: error: " + name +
                              " writes the plans it makes in the temporary folder, but $TMPDIR "
                              "('build/cli_no_such_folder') is not a folder\n");
    EXPECT_FALSE(std::filesystem::exists("build/cli_no_such_folder"));
  }
  expectRunEndingWith("simulate " + gpt + "hetero4.hspmd --fault-trace tests/elastic/dies_twice.trace --steps 5 " +
                          "--recover " + gpt + "tp2.hspmd",
                      1,
                      "hspmc simulate: error: tests/elastic/dies_twice.trace:3: device 1 would die twice, in step 2 "
                      "(forward, tests/elastic/dies_twice.trace:2) and in step 3 (backward), without joining in "
                      "between: a dead device cannot fail\n");
  // Options out of range are the command line's errors (exit status 2).
  for (const std::string option : {"--heartbeat nan", "--heartbeat 0", "--save-every 0 --save build/x.ckpt"}) {
    CliRun run = hspmc("train " + gpt + "hetero4.hspmd" + data + option);
    EXPECT_EQ(run.code, 2) << option;
    EXPECT_NE(run.output.find(option.substr(0, option.find(' ')) + ": "), std::string::npos) << run.output;
  }
}

// On MPI the process of a device that dies is gone (--fail: it kills itself): the others
// notice its silence (heartbeats), agree and go on as on threads, with the same losses.
// hspmc starts mpirun itself (--backend mpi outside mpirun) and exits with the run's status.
TEST(Cli, AnMpiRunGoesOnAfterAProcessDies) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF();
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  for (const ElasticCase &c : elasticCases()) {
    CliRun run = hspmcStartingMpirun("train " + c.plan + " --data examples/data/gpl-3.txt " + c.options +
                                     " --backend mpi --heartbeat 2 --losses build/cli_elastic_mpi.json");
    ASSERT_EQ(run.code, 0) << c.options << "\n" << run.output;
    if (c.comesBack) { // device 3 dies in step 2, and a spare process comes in in its place
      EXPECT_NE(run.output.find("\nhspmc train: device 3 died at the start of its forward pass of step 2 (--fail): "
                                "its process kills itself (SIGKILL)\n"),
                std::string::npos)
          << run.output;
      EXPECT_NE(run.output.find(c.line), std::string::npos) << run.output;
      EXPECT_NE(run.output.find("; went on under plan '"), std::string::npos) << run.output;
      trainWithoutFailures(c, "build/cli_elastic_mpi_b.json");
      expectSameLosses("build/cli_elastic_mpi.json", "build/cli_elastic_mpi_b.json", stepsOf(c), c.options);
      continue;
    }
    // "device 3 died at ...; devices 0, 1, 2 agreed in" -> "device 3 stopped answering (...); ..."
    const std::string line = c.line.substr(0, c.line.find(" died")) + " stopped answering (no heartbeat for 2 s)" +
                             c.line.substr(c.line.find("; devices"));
    EXPECT_NE(run.output.find(line.substr(1)), std::string::npos) << line << "\n" << run.output;
    if (c.options.find("--recover auto") != std::string::npos)
      expectReplanned(run.output);
    EXPECT_NE(run.output.find("hspmc train: " + c.line.substr(1, c.line.find(';') - 1) +
                              " (--fail): its process kills itself (SIGKILL)\n"),
              std::string::npos)
        << run.output;
    trainWithoutFailures(c, "build/cli_elastic_mpi_b.json"); // ctest may run the threads test beside it
    expectSameLosses("build/cli_elastic_mpi.json", "build/cli_elastic_mpi_b.json", stepsOf(c), c.options);
  }
}

// A process killed from outside (kill -9 once step 5 is printed) is survived the same way.
TEST(Cli, AnMpiRunSurvivesAKillFromOutside) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 35 s under the sanitizers; the threads' kills and deaths run there
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  const std::string mark = std::to_string(getpid());
  const std::string command = "HSPMD_KILL_MARK=" + mark +
                              " timeout 120 mpirun --allow-run-as-root --oversubscribe --enable-recovery -x "
                              "HSPMD_KILL_MARK -x ASAN_OPTIONS=detect_leaks=0 -np 4 " +
                              HSPMC_PATH +
                              " train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --steps 20 "
                              "--backend mpi --heartbeat 2 --recover tests/elastic/dp2_on_0_2.hspmd "
                              "--losses build/cli_kill_a.json 2>&1";
  const auto [output, status, killed] = runKillingRank(command, mark, 1, "step 5/");
  ASSERT_GT(killed, 0) << output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(output.find("\ndevice 1 stopped answering (no heartbeat for 2 s); devices 0, 2, 3 agreed in "),
            std::string::npos)
      << output;
  ASSERT_EQ(hspmc("train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --steps 20 --losses "
                  "build/cli_kill_b.json")
                .code,
            0);
  expectSameLosses("build/cli_kill_a.json", "build/cli_kill_b.json", 20, "killed from outside");
}

// A plan that lints clean on its cluster but whose arenas do not fit the memory of the machine
// running its threads is refused before anything is allocated (a GPT of 50 billion parameters
// so declared ran for minutes, swelling, until the system killed it).
TEST(Cli, ATrainingRunTooLargeForThisMachineIsRefused) {
  ASSERT_EQ(hspmc("lint tests/cli/too_large_for_this_machine.hspmd").code, 0);
  const std::string train = "train tests/cli/too_large_for_this_machine.hspmd --data examples/data/gpl-3.txt";
  // On threads; and on MPI where hspmc starts mpirun, every process on this machine.
  for (const auto &[options, first, last] :
       {std::tuple<std::string, std::string, std::string>{
            "", "a threads run holds every device's memory in this process",
            "train it where the memory is (--backend mpi, a process per device, over several machines)"},
        {" --backend mpi", "hspmc starts mpirun with every process on this machine",
         "start mpirun yourself over machines that have the memory (mpirun -np 1 --hostfile FILE hspmc train ...)"}}) {
    const CliRun run = hspmc(train + options);
    EXPECT_EQ(run.code, 1) << run.output;
    const std::string said = "hspmc train: error: " + first + ": the arenas of plan 'huge' (1 device) need ";
    const size_t at = run.output.find(said);
    ASSERT_NE(at, std::string::npos) << run.output;
    // "need N GiB, but this machine has F GiB free (...)": N is more than F.
    std::istringstream rest(run.output.substr(at + said.size()));
    double need = 0, free = 0;
    std::string gib, but, thisWord, machine, has;
    ASSERT_TRUE(rest >> need >> gib >> but >> thisWord >> machine >> has >> free) << run.output;
    EXPECT_EQ(gib + " " + but + " " + thisWord + " " + machine + " " + has, "GiB, but this machine has");
    EXPECT_GT(need, free);
    EXPECT_GT(free, 0);
    const std::string end = " GiB free (MemAvailable and SwapFree in /proc/meminfo); " + last + "\n";
    EXPECT_TRUE(run.output.size() > end.size() && run.output.substr(run.output.size() - end.size()) == end)
        << run.output;
  }
}

// A process killed from outside a run that cannot survive it (no --recover): mpirun ends the
// others, none of them records an exit status, and hspmc said nothing of its own (the run ended
// in mpirun's words, exit status 137). Now it says what happened and what would go on.
TEST(Cli, AnMpiRunKilledFromOutsideSaysSo) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  const std::string mark = std::to_string(getpid()) + "_killed";
  const std::string command = "HSPMD_KILL_MARK=" + mark + " ASAN_OPTIONS=detect_leaks=0 timeout 120 " + HSPMC_PATH +
                              " train examples/gpt/plans/tp2.hspmd --data examples/data/gpl-3.txt --steps 1000 "
                              "--backend mpi 2>&1";
  const auto [output, status, killed] = runKillingRank(command, mark, 1, "step 1/");
  ASSERT_GT(killed, 0) << output;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 124) << output;
  const std::string said = "\nhspmc train: error: the run ended before it finished: process";
  const size_t at = output.find(said);
  ASSERT_NE(at, std::string::npos) << output;
  EXPECT_NE(output.find(" of 2 ended without an exit status (a process killed from outside or by the system; "
                        "mpirun ends the others when one dies: see its messages above); mpirun exited with status ",
                        at),
            std::string::npos)
      << output;
  const std::string last = ". To go on after a death, give --recover (docs/elastic.md)\n";
  EXPECT_TRUE(output.size() >= last.size() && output.substr(output.size() - last.size()) == last) << output;
}

// SIGTERM to an hspmc that started mpirun itself (a scheduler's kill) is passed on: mpirun and
// the run's processes end with it, and it says so. SIGKILL, which hspmc cannot see, ends them
// too (mpirun's parent-death signal). Before, they went on training without it. Every wait is
// bounded, and what is left of the run is killed, whatever the test finds.
// A threads run a signal stops says so, with the checkpoint it kept, then ends by the signal
// (it ended without a word).
TEST(Cli, StoppingAThreadsRunSaysWhatItKept) {
  const std::string log = "build/cli_stop_threads.log", checkpoint = "build/cli_stop_threads.ckpt";
  std::filesystem::remove(log);
  std::filesystem::remove(checkpoint);
  const std::string command = std::string("exec ") + HSPMC_PATH +
                              " train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 100000 "
                              "--save " +
                              checkpoint + " --save-every 2 > " + log + " 2>&1";
  const pid_t run = fork();
  ASSERT_GE(run, 0);
  if (run == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  for (int tenths = 0; tenths < 600 && !std::filesystem::exists(checkpoint); ++tenths)
    usleep(100000);
  const bool saved = std::filesystem::exists(checkpoint);
  usleep(500000); // past the moment the first checkpoint is renamed into place but not yet noted
  kill(run, SIGTERM);
  int status = 0;
  waitpid(run, &status, 0);
  const std::string text = readText(log);
  EXPECT_TRUE(saved) << text;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << "\n" << text;
  const std::string said =
      "\nhspmc train: error: stopped by SIGTERM; the last checkpoint is " + checkpoint + ", saved after step ";
  const size_t at = text.find(said);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(text.find(' ', at + said.size())), " (--load it to go on)\n") << text;
}

TEST(Cli, StoppingAnMpiRunEndsItsProcesses) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  for (const int signal : {SIGTERM, SIGKILL}) {
    const std::string mark = std::to_string(getpid()) + "_stop" + std::to_string(signal), log = "build/cli_stop.log";
    std::filesystem::remove(log);
    const std::string command =
        "exec env HSPMD_KILL_MARK=" + mark + " ASAN_OPTIONS=detect_leaks=0 " + HSPMC_PATH +
        " train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 100000 --backend mpi > " +
        log + " 2>&1";
    const pid_t launcher = fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
      _exit(127);
    }
    auto logText = [&] {
      std::ifstream in(log);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    auto waitFor = [](const std::function<bool()> &done, int seconds) {
      for (int tenths = 0; tenths < 10 * seconds && !done(); ++tenths)
        usleep(100000);
      return done();
    };
    const bool started = waitFor([&] { return logText().find("\nstep 1/") != std::string::npos; }, 60);
    kill(launcher, signal);
    int status = 0;
    bool reaped = false;
    const bool ended = waitFor([&] { return reaped = reaped || waitpid(launcher, &status, WNOHANG) == launcher; }, 30);
    if (!ended) {
      kill(launcher, SIGKILL);
      waitpid(launcher, &status, 0);
    }
    std::vector<int> left;
    waitFor([&] { return (left = markedProcesses(mark)).empty(); }, 10);
    for (int pid : left)
      kill(pid, SIGKILL);
    const std::string name = sigabbrev_np(signal);
    EXPECT_TRUE(started) << name << "\n" << logText();
    EXPECT_TRUE(ended) << "hspmc did not end within 30 s of SIG" << name;
    if (signal == SIGTERM) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << logText();
      EXPECT_NE(logText().find("\nhspmc train: error: stopped by SIGTERM; mpirun and the run's processes were ended\n"),
                std::string::npos)
          << logText();
    }
    EXPECT_TRUE(left.empty()) << left.size() << " of the run's processes were still there 10 s after hspmc ended by SIG"
                              << name;
    // The status directory a SIGKILL leaves (/tmp/hspmd-run-PID-*) goes at the next launch:
    // under ctest -j that may be another test's, started meanwhile (CI saw it gone already).
    auto statusDirectories = [&] {
      int found = 0;
      std::error_code ignored;
      for (const auto &entry : std::filesystem::directory_iterator("/tmp", ignored))
        found += entry.path().filename().string().rfind("hspmd-run-" + std::to_string(launcher) + "-", 0) == 0;
      return found;
    };
    EXPECT_LE(statusDirectories(), signal == SIGKILL ? 1 : 0) << name;
    if (signal == SIGKILL) {
      shell("PATH=/nonexistent " + std::string(HSPMC_PATH) +
            " train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 1 --backend mpi");
      EXPECT_EQ(statusDirectories(), 0) << "the next launch did not remove the killed launch's status directory";
    }
  }
}

// Without mpirun on the PATH, --backend mpi says what is missing.
TEST(Cli, AnMpiRunWithoutMpirunSaysSo) {
  const CliRun run = shell("PATH=/nonexistent " + std::string(HSPMC_PATH) +
                           " train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 1 "
                           "--backend mpi");
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_EQ(run.output, "hspmc train: error: cannot start mpirun (No such file or directory): install "
                        "libopenmpi-dev's openmpi-bin\n");
}

// What an MPI run cannot survive, or is not started for: a clear error, exit status 1, no
// losses written. (Under mpirun --enable-recovery, mpirun exits 0 whatever its processes do:
// hspmc's own launch gives the status.)
TEST(Cli, MpiDeathsThatCannotBeSurvivedAreClearErrors) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  const std::string run = "train examples/gpt/plans/hetero4.hspmd --data examples/data/gpl-3.txt --backend mpi "
                          "--heartbeat 2 --losses build/cli_mpi_dies.json ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--steps 3 --fail 2:1",
       "hspmc train: error: device 1 stopped answering (no heartbeat for 2 s); the run stops (no --recover plan to "
       "go on with)\n"},
      {"--steps 3 --fail 2:0 --recover examples/gpt/plans/tp2.hspmd",
       "hspmc train: error: device 0 stopped answering (no heartbeat for 2 s); no --recover plan uses only the live "
       "devices (1, 2, 3)\n"}};
  for (const auto &[options, message] : cases) {
    std::filesystem::remove("build/cli_mpi_dies.json");
    CliRun result = hspmcStartingMpirun(run + options);
    EXPECT_EQ(result.code, 1) << options;
    EXPECT_FALSE(std::filesystem::exists("build/cli_mpi_dies.json")) << options;
    EXPECT_NE(result.output.find(message), std::string::npos) << options << "\n" << result.output;
  }
  // The user's own mpirun must let the others live on when one dies.
  CliRun result = hspmcUnderMpirun(4, run + "--steps 3 --fail 2:1 --recover examples/gpt/plans/tp2.hspmd");
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.output.find("hspmc train: error: --fail on MPI: mpirun ends every process when one dies; start it "
                               "with mpirun --enable-recovery\n"),
            std::string::npos)
      << result.output;
  // ... and start a spare process for each device that comes back.
  CliRun spares = hspmcUnderMpirun(4,
                                   run + "--steps 5 --fault-trace tests/elastic/death_and_return.trace --recover "
                                         "examples/gpt/plans/pipeline2_recompute.hspmd",
                                   "--enable-recovery");
  EXPECT_NE(spares.output.find("hspmc train: error: mpirun started 4 processes but the plans of the run have 4 "
                               "devices and the fault trace 1 return (a spare process each): run it with mpirun -np "
                               "5\n"),
            std::string::npos)
      << spares.output;
}

// Where a part of the state has no surviving copy (ZeRO's shard on the device that died), a run
// that writes checkpoints (--save-every) resumes from its last one and runs the steps after it
// again: the losses of the run without the failure. Threads and MPI.
TEST(Cli, ALostPartResumesFromTheLastCheckpoint) {
  const std::string run = "train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 6 ",
                    failure = "--fail 4:1 --recover examples/gpt/plans/single.hspmd --save build/cli_resume.ckpt "
                              "--save-every 2 --losses build/cli_resume_a.json",
                    line = "\ndevice 1 died at the start of its forward pass of step 4; devices 0 agreed in ";
  ASSERT_EQ(hspmc(run + "--losses build/cli_resume_b.json").code, 0);
  const bool mpi = std::system("command -v mpirun > /dev/null") == 0;
  for (const std::string backend : {"threads", "mpi"}) {
    if (backend == "mpi" && !mpi)
      continue;
    std::filesystem::remove("build/cli_resume.ckpt");
    CliRun resumed = hspmcStartingMpirun(run + failure + " --backend " + backend);
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    const std::string died = backend == "mpi" ? "\ndevice 1 stopped answering (no heartbeat for 1 s); devices 0 "
                                                "agreed in "
                                              : line;
    EXPECT_NE(resumed.output.find(died), std::string::npos) << resumed.output;
    EXPECT_NE(resumed.output.find("; the survivors (0) cannot rebuild the state, every copy of a part died: no device "
                                  "of the plan switched from holds all of region [32:64] of 'blocks[0].ln1.adam_m'; "
                                  "resumed from the checkpoint of step 2 (build/cli_resume.ckpt) under plan "
                                  "'single': 1 step lost; step 3 is run again\n"),
              std::string::npos)
        << resumed.output;
    expectSameLosses("build/cli_resume_a.json", "build/cli_resume_b.json", 6, "resumed on " + backend);
  }
}

// On MPI a run that switches needs one process per device of all its plans.
TEST(Cli, SwitchingOnMpiNeedsEveryDevice) {
  if (std::system("command -v mpirun > /dev/null") != 0)
    GTEST_SKIP() << "no mpirun";
  CliRun run = hspmcUnderMpirun(2, "train examples/gpt/plans/dp2_zero.hspmd --data examples/data/gpl-3.txt --steps 4 "
                                   "--backend mpi --switch 3:examples/gpt/plans/hetero4.hspmd");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.output.find("hspmc train: error: mpirun started 2 processes but the plans of the run have 4 devices: "
                            "run it with mpirun -np 4\n"),
            std::string::npos)
      << run.output;
}

// explain-switch: the state's size by kind (from the model's own parameter count), the least
// bytes moved, fusion; plans whose layouts agree move nothing.
TEST(Cli, ExplainSwitchCountsTheState) {
  CliRun run = hspmc("explain-switch examples/gpt/plans/dp2_zero.hspmd examples/gpt/plans/hetero4.hspmd --format json");
  ASSERT_EQ(run.code, 0) << run.output;
  const auto doc = nlohmann::json::parse(run.output);
  // TinyGPT: wte 256 x 64, lnf 64, 8 blocks of ln1, ln2 (64), wqkv 64 x 192, wo 64 x 64, w1, w2 64 x 256.
  const int64_t params = 256 * 64 + 64 + 8 * (2 * 64 + 64 * 192 + 64 * 64 + 2 * 64 * 256);
  EXPECT_EQ(doc["parameters"]["bytes"], params * 4);
  EXPECT_EQ(doc["parameters"]["tensors"], 2 + 8 * 6);
  EXPECT_EQ(doc["optimizer_state"]["bytes"], 2 * params * 4);
  EXPECT_EQ(doc["bytes_moved"], doc["bytes_min"]);
  EXPECT_GT(doc["bytes_moved"].get<int64_t>(), 0);
  EXPECT_LT(doc["messages"].get<int64_t>(), doc["messages_unfused"].get<int64_t>());
  EXPECT_GE(doc["max_send_bytes"].get<int64_t>(), doc["balanced_send_bytes"].get<int64_t>());
  EXPECT_GT(doc["step_seconds_after"].get<double>(), 0);  // hetero4's step on cpu4, simulated
  EXPECT_GT(doc["step_seconds_before"].get<double>(), 0); // dp2_zero's, on the same cluster
  EXPECT_EQ(doc["buckets"], 1);                           // cpu4's devices hold both arenas
  // On 14 MiB devices the move goes in buckets by layer; on 12 MiB it does not fit at all.
  CliRun small = hspmc("explain-switch examples/gpt/plans/dp2_zero.hspmd tests/switch/hetero4_small.hspmd");
  ASSERT_EQ(small.code, 0) << small.output;
  EXPECT_NE(small.output.find("\n  in buckets       10 by layer, one after another (the old and new arenas do not fit "
                              "side by side)\n"),
            std::string::npos)
      << small.output;
  CliRun tiny = hspmc("explain-switch examples/gpt/plans/dp2_zero.hspmd tests/switch/hetero4_tiny.hspmd");
  EXPECT_EQ(tiny.code, 1);
  EXPECT_EQ(tiny.output, "hspmc explain-switch: error: device 0 needs 13.8 MiB during the switch even moving in 10 "
                         "buckets by layer (its old arena, 9.9 MiB, beside its state packed out of it, 3.9 MiB), but "
                         "a cpu_small has 12.0 MiB\n");
  CliRun same = hspmc("explain-switch examples/llama/plans/llama2_7b_hetero16.hspmd "
                      "examples/llama/plans/llama2_7b_sym16.hspmd --format json");
  ASSERT_EQ(same.code, 0) << same.output;
  EXPECT_EQ(nlohmann::json::parse(same.output)["bytes_moved"], 0);
  CliRun other = hspmc("explain-switch examples/gpt/plans/single.hspmd examples/llama/plans/tiny_llama_single.hspmd");
  EXPECT_EQ(other.code, 1);
  EXPECT_EQ(other.output,
            "hspmc explain-switch: error: plan 'tiny_single' (examples/llama/plans/tiny_llama_single.hspmd) "
            "cannot continue a run of plan 'single': it trains TinyLLaMA with other parameters than "
            "TinyGPT under plan 'single'\n");
  // A device outside the cluster has no links to price the switch on (it said "inf steps").
  CliRun outside = hspmc("explain-switch examples/gpt/plans/hetero4.hspmd tests/elastic/dp2_on_0_5.hspmd --cluster "
                         "examples/clusters/cpu4.toml");
  EXPECT_EQ(outside.code, 1);
  EXPECT_EQ(outside.output, "hspmc explain-switch: error: device 5 of plan 'dp2_on_0_5' is not in the cluster (cpu4 "
                            "has devices 0..3)\n");
  CliRun unreadable = hspmc(
      "explain-switch examples/gpt/plans/single.hspmd examples/gpt/plans/single.hspmd --cluster tests/no-such.toml");
  EXPECT_EQ(unreadable.code, 1);
  EXPECT_EQ(unreadable.output, "tests/no-such.toml: error: cannot read 'tests/no-such.toml'\n");
}

// hspmc build writes one source per device, main.cpp and the build file; --target cuda the
// same sources with the kernels on GPUs (tests/codegen/check_cuda.sh builds and runs them).
TEST(Cli, BuildWritesTheGeneratedSources) {
  const std::string out = "build/cli_build_test";
  CliRun run = hspmc("build examples/gpt/plans/pipeline2.hspmd -o " + out + " --no-compile");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("wrote 4 files to " + out + " (2 device programs)"), std::string::npos) << run.output;
  std::ifstream device(out + "/device_1.cpp");
  std::string text((std::istreambuf_iterator<char>(device)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("extern const char device_1_text[] =\n    \"program device 1 plan 0 "), std::string::npos);
  EXPECT_NE(text.find("void device_1_backward(DeviceExecutor &x, int mb) {"), std::string::npos);
  EXPECT_NE(text.find("  instruction(x, "), std::string::npos);
  EXPECT_EQ(readText(out + "/main.cpp").find("gpu"), std::string::npos);
  const std::string cuda = "build/cli_build_cuda";
#ifdef HSPMD_HAVE_CUDA
  expectRun("build examples/gpt/plans/single.hspmd --no-compile --target cuda -o " + cuda, 0,
            "wrote 3 files to " + cuda + " (1 device programs)\n");
  const std::string main = readText(cuda + "/main.cpp");
  EXPECT_NE(main.find("#include \"runtime/gpu/GpuOffload.h\""), std::string::npos) << main;
#ifdef HSPMD_HAVE_NCCL // --backend nccl
  EXPECT_NE(main.find("#include \"runtime/gpu/GpuNccl.h\""), std::string::npos) << main;
  EXPECT_NE(main.find("return runtime::generated::main(argc, argv, model, plans, runtime::gpu::gpuOffload, gpuTypes, "
                      "runtime::gpu::gpuNcclOffload);"),
            std::string::npos)
      << main;
  EXPECT_NE(readText(cuda + "/CMakeLists.txt").find("libnccl"), std::string::npos);
#else
  EXPECT_NE(main.find("return runtime::generated::main(argc, argv, model, plans, runtime::gpu::gpuOffload, gpuTypes);"),
            std::string::npos)
      << main;
#endif
  // Each device's type by the plan's cluster, which its process checks its GPU against; the
  // GPU types exclude the CPU threads' "cpu".
  expectRun("build examples/llama/plans/llama2_7b_hetero16.hspmd --no-compile --target cuda -o " + cuda, 0,
            "wrote 18 files to " + cuda + " (16 device programs)\n");
  const std::string hetero = readText(cuda + "/main.cpp");
  EXPECT_NE(hetero.find("  plans[0].deviceTypes[7] = \"H100\";\n  plans[0].deviceTypes[8] = \"A100\";\n"),
            std::string::npos);
  EXPECT_NE(hetero.find("  const std::vector<std::string> gpuTypes = {\"A100\", \"A800\", \"H100\", \"H20\", \"H200\", "
                        "\"H800\", \"L40S\"};\n"),
            std::string::npos);
  EXPECT_NE(readText(cuda + "/CMakeLists.txt").find("/runtime/gpu/libhspmd_gpu.a"), std::string::npos);
  expectRun("build examples/gpt/plans/tp2.hspmd --no-compile --target cuda -o " + cuda, 0,
            "wrote 4 files to " + cuda + " (2 device programs)\n");
#else
  expectRun("build examples/gpt/plans/single.hspmd --no-compile --target cuda -o " + cuda, 1,
            "hspmc build: error: --target cuda: this hspmc was built without the CUDA toolkit (CMake found no nvcc; "
            "docs/gpu.md says what it needs)\n");
#endif
  CliRun tpu = hspmc("build examples/gpt/plans/single.hspmd --no-compile --target tpu -o " + cuda);
  EXPECT_EQ(tpu.code, 2);
  EXPECT_NE(tpu.output.find("--target: tpu not in {cpu,cuda}"), std::string::npos) << tpu.output;
}

// hspmc build's output directory is checked before anything is written: an empty path and a
// file are refused, and so is a directory holding a file it would replace that an earlier
// hspmc build did not write (before, `-o ""` in a project's root replaced its CMakeLists.txt
// and configured the generated project into the project's own build/). A directory it wrote
// before is written again.
TEST(Cli, BuildRefusesAnOutputDirectoryItDidNotWrite) {
  const std::string build = "build examples/gpt/plans/single.hspmd --no-compile -o ";
  expectRun(build + "''", 1, "hspmc build: error: cannot write to : the path is empty\n");
  expectRun(build + "README.md", 1, "hspmc build: error: cannot write to README.md: it is not a directory\n");
  const std::string project = "build/cli_build_project";
  std::filesystem::remove_all(project);
  std::filesystem::create_directories(project);
  std::ofstream(project + "/CMakeLists.txt") << "project(mine)\n";
  expectRun(build + project, 1,
            "hspmc build: error: cannot write to build/cli_build_project: it holds CMakeLists.txt, which "
            "hspmc build did not write (it would be replaced): give a new or empty directory\n");
  EXPECT_EQ(readText(project + "/CMakeLists.txt"), "project(mine)\n");
  std::filesystem::remove(project + "/CMakeLists.txt");
  ASSERT_EQ(hspmc(build + project).code, 0);
  const CliRun again = hspmc(build + project);
  EXPECT_EQ(again.code, 0) << again.output;
}

// The binary is named after its plan: a name longer than a file name may be is an error at the
// plan, before anything is written (it was "compiling the generated code failed", ninja's
// "File name too long" in the log).
namespace {

// examples/gpt/plans/single.hspmd under another name, in build/.
void writeSingleNamed(const std::string &path, const std::string &name) {
  std::ofstream(path) << "import \"../examples/gpt/tiny_gpt.hspmd\"\n\nplan " << name
                      << " for TinyGPT {\n  cluster \"../examples/clusters/cpu4.toml\"\n  bind B = 8, S = 64\n  "
                         "pipeline main share 1 microbatches 1 {\n    stage devices [0] layers blocks with wte, lnf\n  "
                         "}\n}\n";
}

} // namespace

TEST(Cli, BuildRefusesAPlanNameTooLongForAFileName) {
  const std::string name = "p" + std::string(299, 'x');
  writeSingleNamed("build/cli_long_name.hspmd", name);
  std::filesystem::remove_all("build/cli_long_name");
  expectRun("build build/cli_long_name.hspmd --no-compile -o build/cli_long_name", 1,
            "build/cli_long_name.hspmd:3:6: error: plan 'pxxxxxxxxxxxxxxx...' has a name of 300 bytes: hspmc build "
            "names the binary after its plan, and a file name holds at most 255\n");
  EXPECT_FALSE(std::filesystem::exists("build/cli_long_name"));
}

// A plan named `build` builds: CMake's folder beside the binary has a name no plan can have
// (it was build/, and copying the binary onto it failed with "Invalid argument").
TEST(Cli, APlanNamedBuildBuilds) {
#ifdef HSPMD_SANITIZED
  GTEST_SKIP() << "the generated code links the runtime libraries of this build, which the sanitizer build's are not "
                  "made for (tests/CMakeLists.txt, codegen_*): the normal build builds it";
#endif
  writeSingleNamed("build/cli_plan_build.hspmd", "build");
  std::filesystem::remove_all("build/cli_plan_build");
  const CliRun built = hspmc("build build/cli_plan_build.hspmd -o build/cli_plan_build");
  ASSERT_EQ(built.code, 0) << built.output;
  const CliRun ran = shell("build/cli_plan_build/build --data examples/data/gpl-3.txt --steps 1");
  EXPECT_EQ(ran.code, 0) << ran.output;
  EXPECT_NE(ran.output.find("step 1/1  loss "), std::string::npos) << ran.output;
}

// hspmc simulate --trace checks its file before it compiles (before: an uncaught exception
// after the simulation, and an abort).
TEST(Cli, SimulateChecksItsTraceFile) {
  expectRun("simulate examples/gpt/plans/single.hspmd --trace build/no_such_folder/t.json", 1,
            "hspmc simulate: error: cannot write build/no_such_folder/t.json (--trace): the directory "
            "'build/no_such_folder' does not exist\n");
}

// hspmc simulate prints the step time, its own times and a line per device; --format json the
// same data.
TEST(Cli, SimulatePrintsTheStepAndEachDevice) {
  CliRun run = hspmc("simulate examples/gpt/plans/hetero4.hspmd");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(run.output.rfind("step ", 0), 0u) << run.output;
  EXPECT_NE(run.output.find("(TinyGPT under plan 'hetero4' on cluster 'cpu4'; compiled in "), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(" s, simulated in "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n3       cpu "), std::string::npos) << run.output;
  CliRun json = hspmc("simulate examples/gpt/plans/hetero4.hspmd --format json");
  ASSERT_EQ(json.code, 0);
  EXPECT_NE(json.output.find("\"step_seconds\""), std::string::npos);
  EXPECT_NE(json.output.find("\"simulate_seconds\""), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"device\": 3"), std::string::npos) << json.output;
  CliRun none = hspmc("simulate tests/lint/hs200_no_cluster.hspmd");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.output.find("simulate needs a cluster: the plan names none"), std::string::npos) << none.output;
}

// Every cluster-scale example plan compiles for training and simulates: the verifier checks
// its programs across devices. (Deduction once all-gathered the 32B plan's embedding gradient
// inputs across its two pipelines, per micro-batch: 14 micro-batches against 4, a collective
// only one pipeline called.)
TEST(Cli, EveryClusterScaleExamplePlanSimulates) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF();
  for (const auto &entry : std::filesystem::directory_iterator("examples/llama/plans")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("llama", 0) != 0)
      continue; // the tiny plans run in TrainTest
    CliRun run = hspmc("simulate " + entry.path().string());
    EXPECT_EQ(run.code, 0) << name << ": " << run.output;
    EXPECT_EQ(run.output.rfind("step ", 0), 0u) << name << ": " << run.output;
  }
}

// train and build check that --data can feed the model before compiling anything: its inputs
// must be `tokens` and `targets`, i32[B, S]. The model lints clean (lint checks plans).
TEST(Cli, TrainSaysWhichInputsTheDataCannotFeed) {
  const std::string model = "tests/cli/untrainable.hspmd";
  EXPECT_EQ(hspmc("lint " + model).code, 0);
  CliRun train = hspmc("train " + model + " --data examples/data/gpl-3.txt");
  EXPECT_EQ(train.code, 1);
  EXPECT_EQ(train.output, model +
                              ":5:14: error: hspmc train feeds a model 'tokens' and 'targets' from --data, but "
                              "Regression takes 'x' (f32[4, 8])\n"
                              "    fn forward(x: f32[B, d], tokens: i64[B, d]) -> f32[] {\n"
                              "               ^\n" +
                              model +
                              ":5:28: error: 'tokens' must be i32[B, S] for hspmc train (it is i64[4, 8])\n"
                              "    fn forward(x: f32[B, d], tokens: i64[B, d]) -> f32[] {\n"
                              "                             ^~~~~~\n");
  CliRun build = hspmc("build " + model + " -o build/cli_untrainable");
  EXPECT_EQ(build.code, 1);
  EXPECT_NE(build.output.find("error: a program hspmc build writes feeds a model 'tokens' and 'targets' from --data"),
            std::string::npos)
      << build.output;
}

// The planner's plan for a mixed cluster lints without a warning: its stages differ by less
// than a layer (HS202 says nothing then), and nothing is resharded behind its back.
TEST(Cli, APlannedPlanForAMixedClusterLintsWithoutWarnings) {
#ifdef HSPMD_SANITIZED
  GTEST_SKIP() << "the 7B search takes minutes under the sanitizers: the normal build runs it";
#endif
  const std::string out = "build/cli_plan_7b.hspmd";
  CliRun run = hspmc("plan examples/llama/llama2_7b.hspmd --cluster examples/clusters/h100x4_a100x4.toml --seq 4096 "
                     "--tokens 65536 -o " +
                     out);
  ASSERT_EQ(run.code, 0) << run.output;
  CliRun lint = hspmc("lint " + out);
  EXPECT_EQ(lint.code, 0) << lint.output;
  EXPECT_EQ(lint.output, "lint: 0 errors, 0 warnings\n");
}

// hspmc plan prints its progress (the search, each finalist) on stderr and its result on
// stdout, so that a script can read the result alone.
TEST(Cli, PlanPrintsItsProgressOnStderr) {
  const std::string out = "build/cli_plan_stderr.hspmd";
  CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                     "--tokens 256 -o " +
                     out + " 2>/dev/null && echo finished");
  EXPECT_NE(run.output.find("wrote " + out + ": "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("simulated step "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("finished"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("searched "), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("  planned   "), std::string::npos) << run.output;
}

// An -o that cannot be written fails before any planning, with
// the reason: before, the finalists were compiled and simulated first.
TEST(Cli, PlanChecksItsOutputsBeforePlanning) {
  const std::string plan = "plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                           "--tokens 256 ";
  expectRun(plan + "-o build/no_such_folder/out.hspmd", 1,
            "hspmc plan: error: cannot write build/no_such_folder/out.hspmd: the directory "
            "'build/no_such_folder' does not exist\n");
  expectRun(plan + "-o build", 1, "hspmc plan: error: cannot write build: it is a directory\n");
  expectRun(plan + "-o /dev/null", 1, "hspmc plan: error: cannot write /dev/null: it is not a regular file\n");
  expectRun(plan + "-o ''", 1, "hspmc plan: error: cannot write : the path is empty\n");
  // The folder's existence is checked by the command line's parser.
  expectRun(plan + "-o build/cli_plan_outputs.hspmd --keep-finalists README.md", 2,
            "--keep-finalists: Directory is actually a file: README.md\nRun with --help for more information.\n");
}

// No command writes an output over a file it reads (a checkpoint over the training data, a
// plan over its model, a trace over the plan: each was replaced), by any name of it (a link),
// nor two outputs to one file. On copies: without the check the files are written over.
TEST(Cli, OutputsDoNotReplaceTheInputs) {
  namespace fs = std::filesystem;
  const std::string dir = "build/cli_reads";
  fs::remove_all(dir);
  fs::create_directories(dir + "/plans");
  fs::copy_file("examples/gpt/tiny_gpt.hspmd", dir + "/m.hspmd");
  fs::copy_file("examples/clusters/cpu4.toml", dir + "/c.toml");
  fs::copy_file("examples/data/gpl-3.txt", dir + "/data.txt");
  fs::create_symlink("c.toml", dir + "/c_link.hspmd");
  std::ofstream(dir + "/plans/single.hspmd")
      << "import \"../m.hspmd\"\nplan single for TinyGPT {\n  cluster \"../c.toml\"\n  bind B = 8, S = 64\n  "
         "optimizer adamw(lr = 1e-3)\n  pipeline main share 1 microbatches 1 {\n    stage devices [0] layers blocks "
         "with wte, lnf\n  }\n}\n";
  std::ofstream(dir + "/lengths.hspmd") << "64\n32\n";
  auto text = [](const std::string &path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::map<std::string, std::string> before;
  for (const auto &entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file())
      before[entry.path().string()] = text(entry.path().string());
  const std::string train = "train " + dir + "/plans/single.hspmd --data " + dir + "/data.txt --steps 1 ",
                    error = "hspmc train: error: cannot write ";
  expectRun(train + "--save " + dir + "/data.txt", 1,
            error + dir + "/data.txt (--save): it is the training data (--data), which the command reads\n");
  expectRun(train + "--losses " + dir + "/plans/single.hspmd", 1,
            error + dir +
                "/plans/single.hspmd (--losses): it is a source file of plan 'single', which the command reads\n");
  expectRun(train + "--trace " + dir + "/m.hspmd", 1,
            error + dir + "/m.hspmd (--trace): it is a source file of plan 'single', which the command reads\n");
  expectRun(train + "--trace " + dir + "/c_link.hspmd", 1,
            error + dir +
                "/c_link.hspmd (--trace): it is the cluster file of plan 'single', which the command reads\n");
  expectRun(train + "--losses " + dir + "/out.json --trace " + dir + "/./out.json", 1,
            error + dir + "/./out.json (--trace): --losses writes it too\n");
  const std::string plan = "plan " + dir + "/m.hspmd --cluster " + dir + "/c.toml --seq 64 --tokens 512 -o ";
  expectRun(plan + dir + "/m.hspmd", 1,
            "hspmc plan: error: cannot write " + dir +
                "/m.hspmd: it is a source file of the model, which the command reads\n");
  expectRun(plan + dir + "/c_link.hspmd", 1,
            "hspmc plan: error: cannot write " + dir +
                "/c_link.hspmd: it is the cluster file (--cluster), which the command reads\n");
  expectRunEndingWith(plan + dir + "/lengths.hspmd --length-distribution " + dir + "/lengths.hspmd", 1,
                      "hspmc plan: error: cannot write " + dir +
                          "/lengths.hspmd: it is the lengths file (--length-distribution), which the command reads\n");
  expectRun(plan + dir + "/out.toml", 1,
            "hspmc plan: error: cannot write " + dir +
                "/out.toml: hspmc reads a .toml file as a cluster or a plan set, not as a plan: name it .hspmd\n");
  expectRun("simulate " + dir + "/plans/single.hspmd --trace " + dir + "/plans/single.hspmd", 1,
            "hspmc simulate: error: cannot write " + dir +
                "/plans/single.hspmd (--trace): it is a source file of the "
                "plan, which the command reads\n");
  for (const auto &[path, held] : before)
    EXPECT_EQ(text(path), held) << path << " was written over";
  // --save may replace the checkpoint the run loaded (it is read whole first).
  const std::string checkpoint = dir + "/c.ckpt";
  ASSERT_EQ(hspmc(train + "--save " + checkpoint).code, 0);
  CliRun resumed = hspmc(train + "--load " + checkpoint + " --save " + checkpoint);
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  expectRun(train + "--load " + checkpoint + " --losses " + checkpoint, 1,
            error + checkpoint + " (--losses): it is the checkpoint loaded (--load), which the command reads\n");
}

// hspmc plan writes a plan that lints clean, trains, and in the simulator beats equal shares
// on a mixed cluster (slow devices take fewer, earlier positions).
TEST(Cli, PlanWritesAPlanThatLintsAndTrains) {
  const std::string out = "build/cli_plan_test.hspmd";
  CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                     "--tokens 256 -o " +
                     out + " --report");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("wrote " + out + ": "), std::string::npos) << run.output;
  // Both kinds of finalists were simulated, and the local programs' fast algorithms reach
  // CBC's optimum on this instance.
  EXPECT_NE(run.output.find("\n  planned   "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n  symmetric "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("(proven optimal): gap 0.00%"), std::string::npos) << run.output;
  CliRun lint = hspmc("lint " + out);
  EXPECT_EQ(lint.code, 0) << lint.output;
  EXPECT_NE(lint.output.find("lint: 0 errors"), std::string::npos) << lint.output;
  CliRun train = hspmc("train " + out + " --data examples/data/gpl-3.txt --steps 2");
  EXPECT_EQ(train.code, 0) << train.output;
  CliRun bad = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                     "--tokens 100 -o " +
                     out);
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.output,
            "examples/gpt/tiny_gpt.hspmd: error: --tokens (100) must be a positive multiple of --seq (64)\n");
  CliRun unpriced = hspmc("plan tests/planner/no_attention.hspmd --cluster examples/clusters/cpu4.toml --seq 64 "
                          "--tokens 256 -o " +
                          out);
  EXPECT_EQ(unpriced.code, 1);
  EXPECT_EQ(
      unpriced.output,
      "tests/planner/no_attention.hspmd: error: model 'Mixer' has no attention: the planner's cost model needs one\n");
  CliRun nowhere = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/no_such.toml --seq 64 "
                         "--tokens 256 -o " +
                         out);
  EXPECT_EQ(nowhere.code, 1);
  EXPECT_EQ(nowhere.output, "examples/clusters/no_such.toml: error: cannot read 'examples/clusters/no_such.toml'\n");
}

// docs/runtime.md: `hspmc plan --precision bf16` prices, compiles and writes bf16 plans. Two
// sequences of 1024 positions on a device of 14.3 MiB: the tiny GPT's smallest plan (one
// device, recomputation, a sequence per micro-batch) needs 15.0 MiB in fp32 and 10.6 MiB in
// bf16, so no fp32 plan fits and a bf16 one does, says `precision bf16`, lints clean (not in
// fp32) and trains in bf16.
TEST(Cli, PlanInBf16FitsWhereFp32DoesNot) {
  const std::string cluster = "build/cli_plan_bf16.toml", out = "build/cli_plan_bf16.hspmd";
  std::ofstream(cluster) << "name = \"small\"\ninter_node_gbps = 5.0\n[[nodes]]\nname = \"local\"\ntype = \"tiny\"\n"
                            "devices = 1\n[types.tiny]\nbf16_tflops = 1.0\nmemory_gib = 0.014\nhbm_gbps = 100.0\n"
                            "intra_node_gbps = 10.0\n";
  const std::string plan =
      "plan examples/gpt/tiny_gpt.hspmd --cluster " + cluster + " --seq 1024 --tokens 2048 -o " + out;
  std::filesystem::remove(out);
  CliRun fp32 = hspmc(plan);
  EXPECT_EQ(fp32.code, 1) << fp32.output;
  EXPECT_NE(fp32.output.find("hspmc plan: error: no finalist fits the devices' memory"), std::string::npos)
      << fp32.output;
  CliRun bf16 = hspmc(plan + " --precision bf16");
  ASSERT_EQ(bf16.code, 0) << bf16.output;
  EXPECT_NE(bf16.output.find("wrote " + out + ": "), std::string::npos) << bf16.output;
  EXPECT_NE(readText(out).find("\n  precision bf16\n"), std::string::npos) << readText(out);
  CliRun lint = hspmc("lint " + out);
  EXPECT_EQ(lint.code, 0) << lint.output;
  CliRun train = hspmc("train " + out + " --data examples/data/gpl-3.txt --steps 1");
  EXPECT_EQ(train.code, 0) << train.output;
  EXPECT_NE(train.output.find("(threads, bf16)"), std::string::npos) << train.output;
  EXPECT_EQ(hspmc("lint " + out + " --precision fp32").code, 1); // the same plan in fp32 does not fit
  // The docs' example: on cpu_mixed4 the bf16 plan simulates faster than the fp32 one.
  const std::string args = docsCommand("runtime.md", "plan-bf16");
  ASSERT_FALSE(args.empty());
  std::string fp32Args = args.substr(0, args.find(" --precision"));
  fp32Args.replace(fp32Args.find("tiny_bf16"), 9, "tiny_fp32"); // not over the docs' plan
  CliRun docs = hspmc(args), full = hspmc(fp32Args);
  ASSERT_EQ(docs.code, 0) << docs.output;
  ASSERT_EQ(full.code, 0) << full.output;
  auto step = [](const std::string &output) {
    const size_t at = output.find("simulated step ");
    return at == std::string::npos ? 0.0 : std::stod(output.substr(at + 15));
  };
  EXPECT_GT(step(docs.output), 0);
  EXPECT_LT(step(docs.output), step(full.output)) << docs.output << full.output;
  std::filesystem::remove(cluster);
  std::filesystem::remove(out);
}

// With every candidate a finalist (the tiny GPT on cpu_mixed4 has 34), strategies that come
// out as the same plan (pipelines the batch program leaves unused: "cpu_slow: none", whatever
// cpu_slow's option was) are simulated once, and every finalist compiles: two pipelines whose
// second fetches the tied embedding for its last stage used to take it from the other pipeline
// (HS301).
TEST(Cli, PlanSimulatesEachDistinctFinalistOnce) {
  CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                     "--tokens 256 --finalists 20 --every-finalist -o build/cli_plan_all.hspmd");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(run.output.find("not compiled"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("searched 34 candidates"), std::string::npos) << run.output;
  const std::string unused = "pipelines per type: cpu_slow: none; cpu: 2 pipelines of 1 stage tp 1: ";
  const size_t first = run.output.find(unused);
  ASSERT_NE(first, std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(unused, first + 1), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("error"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("cpu_slow: 1 pipeline of 1 stage tp 2; cpu: 1 pipeline of 2 stages tp 1: estimated"),
            std::string::npos)
      << run.output;
}

// Without --every-finalist, the estimates leave out finalists they rule out: one whose
// estimated step, at the smallest error its family has shown, is slower than the fastest
// simulated plan that fits. Here most of the 34 are left out, and the plan is the one
// compiling every finalist chooses.
TEST(Cli, PlanLeavesOutTheFinalistsItsEstimatesRuleOut) {
  const std::string common = "plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                             "--tokens 256 --finalists 20 ";
  CliRun every = hspmc(common + "--every-finalist -o build/cli_plan_every.hspmd");
  ASSERT_EQ(every.code, 0) << every.output;
  CliRun some = hspmc(common + "-o build/cli_plan_every.hspmd");
  ASSERT_EQ(some.code, 0) << some.output;
  // Context parallelism has shown 2.26x its estimate (36.940 / 16.352 ms): less 10%, 2.03x.
  EXPECT_NE(some.output.find("  planned   context-parallel group of 2 x tp 2 (all devices), shares from the local "
                             "program: estimated 16.906 ms, at least 34.373 ms at its family's error, slower than "
                             "18.930 ms simulated: not compiled\n"),
            std::string::npos)
      << some.output;
  const auto compiled = [](const std::string &output) {
    size_t n = 0;
    for (size_t at = output.find("simulated "); at != std::string::npos; at = output.find("simulated ", at + 1))
      n += output.compare(at - 2, 2, ", ") == 0;
    return n;
  };
  EXPECT_LT(compiled(some.output), compiled(every.output) / 3) << some.output;
  const auto written = [](const std::string &output) { return output.substr(output.find("\nwrote ")); };
  EXPECT_EQ(written(some.output), written(every.output));
}

// A finalist whose only fault is `zero` state its replicas do not divide (HS104) is compiled
// again with `chunked` (its shards gathered by a split all-gather): on 16 H800 + 32 H20 the
// per-type pipelines, whose 5 replicas do not divide the 32B model's widths, become the plan
// (before, the symmetric plan was written), and it lints clean.
TEST(Cli, PlanChunksZeroStateItsReplicasDoNotDivide) {
#ifdef HSPMD_SANITIZED
  GTEST_SKIP() << "a 32B plan's finalists take minutes under the sanitizers: the normal build runs it";
#endif
  const std::string out = "build/cli_plan_chunked.hspmd", kept = "build/cli_plan_chunked_finalists";
  std::filesystem::remove_all(kept);
  std::filesystem::create_directories(kept);
  CliRun run = hspmc("plan examples/llama/llama32b.hspmd --cluster examples/clusters/h800x16_h20x32.toml --seq 4096 "
                     "--tokens 147456 -o " +
                     out + " --keep-finalists " + kept);
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("  planned   pipelines per type: H800: 1 pipeline of 8 stages tp 2; H20: 4 pipelines of 1 "
                            "stage tp 8 (chunked zero state): estimated "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("wrote " + out + ": pipelines per type: "), std::string::npos) << run.output;
  EXPECT_NE(readText(out).find("\n  zero\n  chunked\n"), std::string::npos) << readText(out);
  CliRun lint = hspmc("lint " + out);
  EXPECT_EQ(lint.code, 0) << lint.output;
  EXPECT_NE(lint.output.find("lint: 0 errors"), std::string::npos) << lint.output;
  // The finalist kept in the folder is the plan compiled: `chunked` too, so it lints clean.
  const std::string finalist = kept + "/cli_plan_chunked_1_planned.hspmd";
  EXPECT_NE(readText(finalist).find("H20: 4 pipelines of 1 stage tp 8"), std::string::npos) << readText(finalist);
  EXPECT_NE(readText(finalist).find("\n  zero\n  chunked\n"), std::string::npos) << readText(finalist);
  lint = hspmc("lint " + finalist);
  EXPECT_EQ(lint.code, 0) << lint.output;
}

// When no finalist fits memory, the next best as many of each family are simulated too,
// once: LLaMA-2-13B at 144K positions on 8 H100 + 8 A100 with one finalist per family, none
// of the first five fits 80 GiB; of the next five, context parallelism over all 16 devices as
// 4 groups of tp 4 does, and is written.
TEST(Cli, PlanWidensTheFinalistsWhenNoneFits) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF();
  const std::string out = "build/cli_plan_144k.hspmd";
  CliRun run = hspmc("plan examples/llama/llama2_13b.hspmd --cluster examples/clusters/h100x8_a100x8.toml "
                     "--seq 147456 --tokens 147456 --finalists 1 -o " +
                     out);
  EXPECT_EQ(run.code, 0) << run.output;
  const auto widened =
      run.output.find("no finalist fits the devices' memory; simulating the next best 1 of each family:\n");
  ASSERT_NE(widened, std::string::npos) << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.begin() + static_cast<std::ptrdiff_t>(widened), '\n'), 6)
      << run.output; // the search line and five finalists
  EXPECT_NE(run.output.find("wrote " + out + ": context-parallel group of 4 x tp 4 (all devices)"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("; no symmetric plan fits\n"), std::string::npos) << run.output;
}

// A cluster of 8192 nodes (65536 devices): the topology kept a table of every two devices'
// widest path (34 GB here: the run was killed for memory) and the batch split took from the
// pipelines finishing last by scanning all of them per sequence (minutes). Under a deadline,
// so that a regression fails rather than hangs.
TEST(Cli, PlanScalesToClustersOfManyNodes) {
  std::string cluster = "name = \"many\"\ninter_node_gbps = 50.0\n";
  for (int node = 0; node < 8192; ++node)
    cluster += node % 2 ? "[[nodes]]\ntype = \"H100\"\ndevices = 8\n" : "[[nodes]]\ntype = \"A100\"\ndevices = 8\n";
  std::ofstream("build/cli_many_nodes.toml") << cluster;
  const CliRun run =
      shell("timeout 120 " + std::string(HSPMC_PATH) +
            " plan examples/gpt/tiny_gpt.hspmd --cluster build/cli_many_nodes.toml --seq 64 --tokens 512 "
            "-o build/cli_many_nodes.hspmd");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("\nwrote build/cli_many_nodes.hspmd: pipelines per type: "), std::string::npos)
      << run.output;
  EXPECT_EQ(hspmc("lint build/cli_many_nodes.hspmd").code, 0);
}

// The search prices a data-parallel gradient sync as one collective per parameter, each paying
// the ring's latency: the tiny GPT's 51 tensors over 8 replicas (ZeRO) are 3.5 ms of latency.
// Priced as one all-reduce of all the bytes, 8 pipelines of 1 stage on one node were estimated
// at 0.135 ms and simulated at 3.526 ms, and written at 65536 devices where nothing else was
// simulated; now the planned plan's estimate is near its simulation.
TEST(Cli, PlanPricesEachParametersSynchronisation) {
  std::string cluster = "name = \"mixed512\"\ninter_node_gbps = 50.0\n";
  for (int node = 0; node < 64; ++node)
    cluster += node % 2 ? "[[nodes]]\ntype = \"H100\"\ndevices = 8\n" : "[[nodes]]\ntype = \"A100\"\ndevices = 8\n";
  std::ofstream("build/cli_mixed512.toml") << cluster;
  const CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster build/cli_mixed512.toml --seq 64 --tokens 512 "
                           "-o build/cli_mixed512.hspmd");
  ASSERT_EQ(run.code, 0) << run.output;
  const size_t planned = run.output.find("\n  planned   ");
  ASSERT_NE(planned, std::string::npos) << run.output;
  const size_t estimated = run.output.find("estimated ", planned), simulated = run.output.find("simulated ", planned);
  ASSERT_NE(simulated, std::string::npos) << run.output;
  const double estimate = std::stod(run.output.substr(estimated + 10)),
               step = std::stod(run.output.substr(simulated + 10));
  EXPECT_NEAR(estimate / step, 1.0, 0.25) << run.output;
  EXPECT_NE(run.output.find("; best symmetric plan "), std::string::npos) << run.output; // and it beats them
}

// A plan is named after its file; a file named like a word of the language (-o plan.hspmd)
// gets a name that is not one, and the plan lints clean (it did not: "unexpected 'plan'").
TEST(Cli, APlanFileNamedLikeAKeywordGetsAName) {
  for (const std::string word : {"plan", "stage"}) {
    const std::string out = "build/" + word + ".hspmd";
    CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                       "--tokens 256 -o " +
                       out);
    ASSERT_EQ(run.code, 0) << run.output;
    EXPECT_NE(readText(out).find("\nplan p_" + word + " for TinyGPT {\n"), std::string::npos) << readText(out);
  }
}

TEST(Cli, PlanPerLengthBucket) {
  // examples/data/lengths_tiny.txt: 200 lengths from 8 to 64; buckets of 8, 16, 32 and 64.
  const std::string out = "build/cli_lengths.hspmd";
  CliRun run = hspmc("plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                     "--tokens 256 -o " +
                     out + " --length-distribution examples/data/lengths_tiny.txt");
  ASSERT_EQ(run.code, 0) << run.output;
  for (const std::string &plan :
       {out, std::string("build/cli_lengths_16.hspmd"), std::string("build/cli_lengths_32.hspmd")}) {
    CliRun lint = hspmc("lint " + plan);
    EXPECT_NE(lint.output.find("lint: 0 errors"), std::string::npos) << plan << ": " << lint.output;
  }
  // ... and the plan set naming them, which trains on documents.
  const std::string set = readText("build/cli_lengths.planset.toml");
  EXPECT_NE(set.find("plans = [ 'cli_lengths_8.hspmd', 'cli_lengths_16.hspmd', 'cli_lengths_32.hspmd', "
                     "'cli_lengths.hspmd' ]"),
            std::string::npos)
      << set;
  EXPECT_NE(run.output.find("wrote plan set build/cli_lengths.planset.toml: hspmc train "), std::string::npos)
      << run.output;
  // It prices the set over documents of these lengths, by strategy.
  EXPECT_NE(run.output.find("\nthe plan set over documents of these lengths:\ndocuments: 200 documents, 3688 tokens; "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("\npacked, one plan (cli_lengths, "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\nper step, 4 plans (Hetu) "), std::string::npos) << run.output;
  // The shorter buckets' plans take the 64-position plan's layout (they cost little more
  // here), so the set's plans hold the state alike and can run within one step.
  for (const std::string bucket : {"8", "16", "32"})
    EXPECT_NE(run.output.find("bucket of " + bucket + " positions ("), std::string::npos) << run.output;
  size_t kept = 0;
  for (size_t at = run.output.find("  the layout of the 64-position plan: simulated "); at != std::string::npos;
       at = run.output.find("  the layout of the 64-position plan: simulated ", at + 1))
    kept += run.output.find(": kept, the set's plans share one layout\n", at) < run.output.find('\n', at) + 1;
  EXPECT_EQ(kept, 3u) << run.output;
  EXPECT_NE(readText("build/cli_lengths_16.hspmd")
                .find("// Planned by hspmc plan: the layout of the 64-position "
                      "plan ("),
            std::string::npos);
  EXPECT_NE(run.output.find("\nper micro-batch, 4 plans (hspmd) "), std::string::npos) << run.output;
  CliRun together = hspmc("train build/cli_lengths.planset.toml --data examples/data/gpl-3.txt --documents --tokens "
                          "64 --steps 3 --granularity micro-batch");
  EXPECT_EQ(together.code, 0) << together.output;
  EXPECT_NE(together.output.find("\nstep 3/3  loss "), std::string::npos) << together.output;
  CliRun trained =
      hspmc("train build/cli_lengths.planset.toml --data examples/data/gpl-3.txt --documents --tokens 64 --steps 3");
  EXPECT_EQ(trained.code, 0) << trained.output;
  EXPECT_NE(trained.output.find("\nstep 3/3  loss "), std::string::npos) << trained.output;
  // Padding every sequence to 64 positions costs more than a plan per bucket.
  const size_t at = run.output.find(" under one plan: ");
  ASSERT_NE(at, std::string::npos) << run.output;
  EXPECT_GT(std::stod(run.output.substr(at + 17)), 1.0) << run.output;
  // Bad files.
  std::ofstream("build/cli_lengths_bad.txt") << "# lengths\n12\nabc\n";
  std::ofstream("build/cli_lengths_long.txt") << "12\n100\n";
  const std::string base = "plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64 "
                           "--tokens 256 -o build/cli_lengths_x.hspmd --length-distribution ";
  CliRun bad = hspmc(base + "build/cli_lengths_bad.txt");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.output, "build/cli_lengths_bad.txt:3: error: 'abc' is not a sequence length\n");
  CliRun longer = hspmc(base + "build/cli_lengths_long.txt");
  EXPECT_EQ(longer.code, 1);
  EXPECT_EQ(longer.output, "build/cli_lengths_long.txt:2: error: length 100 exceeds --seq (64)\n");
  CliRun missing = hspmc(base + "build/no_such_lengths.txt");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.output, "build/no_such_lengths.txt: error: cannot read 'build/no_such_lengths.txt'\n");
}

TEST(Cli, CheckReportsErrorsWithExitOne) {
  CliRun run = hspmc("check tests/diagnostics/shape_matmul_mismatch.hspmd");
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.output, "tests/diagnostics/shape_matmul_mismatch.hspmd:5:14: error: matmul: contracted dimensions "
                        "differ: f32[B, S, 8] @ f32[4, 4] (8 vs 4)\n"
                        "      return x @ w\n"
                        "               ^\n");
}

TEST(Cli, CheckJsonOutput) {
  CliRun run = hspmc("check --format json tests/diagnostics/name_unknown.hspmd");
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.output.find("\"message\": \"unknown name 'y'\""), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\"ok\": false"), std::string::npos);
  EXPECT_NE(run.output.find("\"line\": 4"), std::string::npos);
  // A file named with a byte that is not UTF-8: JSON has no way to say it, so it is U+FFFD
  // (nlohmann threw, and hspmc said "internal error").
  const std::string odd = "build/cli_json_\xff.hspmd";
  std::ofstream(odd) << readText("tests/diagnostics/name_unknown.hspmd");
  CliRun named = hspmc("check --format json '" + odd + "'");
  EXPECT_EQ(named.code, 1) << named.output;
  EXPECT_NE(named.output.find("\"file\": \"build/cli_json_\xef\xbf\xbd.hspmd\""), std::string::npos) << named.output;
  EXPECT_EQ(hspmc("lint --format json '" + odd + "'").code, 1);
}

TEST(Cli, MissingFileIsAUserError) {
  CliRun run = hspmc("check no/such/file.hspmd");
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.output, "no/such/file.hspmd: error: cannot read 'no/such/file.hspmd'\n");
  // An import that names a folder is reported at the import (it was at the folder's name).
  std::filesystem::create_directories("build/cli_import/folder.hspmd");
  std::ofstream("build/cli_import/imp.hspmd") << "import \"folder\"\n";
  // A name too long for the system is a file that cannot be read (--switch said "internal
  // error: filesystem error: status: File name too long").
  std::string longName;
  for (int k = 0; k < 3000; ++k)
    longName += "a/";
  CliRun tooLong =
      hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 2 --switch 2:" + longName +
            "x.hspmd");
  EXPECT_EQ(tooLong.code, 1);
  EXPECT_EQ(tooLong.output.rfind(longName + "x.hspmd: error: cannot read '" + longName + "x.hspmd'", 0), 0u)
      << tooLong.output.substr(0, 300);
  // In a current folder that was deleted (hspmc plan threw std::bad_alloc from CBC's setup).
  CliRun gone =
      shell("mkdir -p build/cli_gone && cd build/cli_gone && rmdir ../cli_gone && " + std::string(HSPMC_PATH) +
            " plan " + HSPMD_SOURCE_DIR + "/examples/gpt/tiny_gpt.hspmd --cluster " + HSPMD_SOURCE_DIR +
            "/examples/clusters/cpu4.toml --seq 64 --tokens 512 -o /dev/null");
  EXPECT_EQ(gone.code, 1);
  EXPECT_EQ(gone.output, "hspmc: error: the current folder cannot be read (No such file or directory; was it "
                         "deleted?): change to a folder that exists\n");
  CliRun folder = hspmc("check build/cli_import/imp.hspmd");
  EXPECT_EQ(folder.code, 1);
  EXPECT_EQ(folder.output, "build/cli_import/imp.hspmd:1:8: error: cannot read import \"folder\" "
                           "(build/cli_import/folder.hspmd): it is a directory\n"
                           "  import \"folder\"\n"
                           "         ^~~~~~~~\n");
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(hspmc("").code, 2);
  CliRun unknown = hspmc("frobnicate");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.output, "hspmc: error: unknown command 'frobnicate' (the commands: check, passes, dump-ir, train, "
                            "simulate, plan, build, dump-program, lint, explain-reshard, explain-switch)\n");
  // Range errors say the range.
  const std::string plan = "plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu4.toml -o build/x.hspmd ";
  CliRun seq = hspmc(plan + "--seq 0 --tokens 64");
  EXPECT_EQ(seq.code, 2);
  EXPECT_EQ(seq.output.substr(0, seq.output.find('\n')), "--seq: Value 0 not in range 1 to 1048576");
  CliRun tokens = hspmc(plan + "--seq 64 --tokens 4294967296");
  EXPECT_EQ(tokens.code, 2);
  EXPECT_EQ(tokens.output.substr(0, tokens.output.find('\n')),
            "--tokens: Value 4294967296 not in range 1 to 134217728");
  CliRun steps = hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps -1");
  EXPECT_EQ(steps.code, 2);
  EXPECT_EQ(steps.output.substr(0, steps.output.find('\n')),
            "--steps: Value -1 not in range 0 to 9223372036854775807"); // not 309 digits of the largest double
  // One past int64: refused, not run as 9223372036854775807 steps (CLI11 saturates).
  CliRun past =
      hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 9223372036854775808");
  EXPECT_EQ(past.code, 2);
  EXPECT_EQ(past.output.substr(0, past.output.find('\n')),
            "--steps: Value 9223372036854775808 not in range 0 to 9223372036854775807");
  CliRun words = hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 0x10");
  EXPECT_EQ(words.code, 2);
  EXPECT_EQ(words.output.substr(0, words.output.find('\n')), "--steps: Value 0x10 is not a whole number");
  // --seed: CLI11 took -5 as 2^64 - 5 and 2^64 as some other seed, silently.
  for (const auto &[seed, message] : std::vector<std::pair<std::string, std::string>>{
           {"-5", "--seed: Value -5 is not a whole number from 0"},
           {"18446744073709551616", "--seed: Value 18446744073709551616 not in range 0 to 18446744073709551615"}}) {
    CliRun bad = hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 1 --seed " + seed);
    EXPECT_EQ(bad.code, 2) << seed;
    EXPECT_EQ(bad.output.substr(0, bad.output.find('\n')), message);
  }
  EXPECT_EQ(hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 1 --seed "
                  "18446744073709551615")
                .code,
            0);
  // +5 is seed 5, as --steps takes +3 (it was refused).
  std::vector<std::vector<double>> seeded;
  for (const std::string seed : {"+5", "5", "6"}) {
    const std::string losses = "build/cli_seed" + seed + ".json";
    ASSERT_EQ(hspmc("train examples/gpt/plans/single.hspmd --data examples/data/gpl-3.txt --steps 1 --seed " + seed +
                    " --losses " + losses)
                  .code,
              0)
        << seed;
    seeded.push_back(lossesOf(losses));
  }
  EXPECT_EQ(seeded[0].size(), 1u);
  EXPECT_EQ(seeded[0], seeded[1]);
  EXPECT_NE(seeded[1], seeded[2]);
  // hspmc plan takes the model, not a plan file (it was planned at the plan's own bindings).
  CliRun planFile = hspmc("plan examples/gpt/plans/tp2.hspmd --cluster examples/clusters/cpu4.toml --seq 64 "
                          "--tokens 512 -o build/x.hspmd");
  EXPECT_EQ(planFile.code, 1);
  EXPECT_EQ(planFile.output.substr(0, planFile.output.find('\n')),
            "examples/gpt/plans/tp2.hspmd:4:6: error: 'examples/gpt/plans/tp2.hspmd' holds a plan; hspmc plan takes "
            "the model file (the one that defines model TinyGPT)");
  // A shape whose bytes leave 64 bits (they printed as negative or 0 bytes).
  CliRun huge = hspmc("explain-reshard --shape 4294967296,4294967296 --from '[0,1]: S0' --to '[0,1]: R'");
  EXPECT_EQ(huge.code, 1);
  EXPECT_EQ(huge.output, "hspmc explain-reshard: error: --shape 4294967296,4294967296 of f32 is more than 256 TiB\n");
  // Layouts of many devices (a million ran for minutes: a reduction's n^2 messages).
  CliRun many = hspmc("explain-reshard --shape 8,16 --from '[0..1024]: S0' --to '[0..1025]: R'");
  EXPECT_EQ(many.code, 1);
  EXPECT_EQ(many.output, "hspmc explain-reshard: error: --to names 1025 devices; explain-reshard lists every message "
                         "of a layout change, and explains layouts of at most 1024 devices\n");
  EXPECT_EQ(hspmc("check").code, 2);
  EXPECT_EQ(hspmc("check --format xml examples/gpt/tiny_gpt.hspmd").code, 2);
}

TEST(Cli, VersionAndHelp) {
  CliRun version = hspmc("--version");
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.output.rfind("hspmc ", 0), 0u);
  for (const char *sub : {"", "check ", "dump-ir "}) {
    CliRun help = hspmc(std::string(sub) + "--help");
    EXPECT_EQ(help.code, 0) << sub;
    EXPECT_NE(help.output.find("Usage"), std::string::npos) << sub;
  }
}

// CBC's libraries cost every process about 3 ms as it starts (bench/startup.py): hspmc loads them
// when the planner first solves an integer program (planner/Cbc.h), as it does cuBLAS when a GPU
// stream is first made. The dynamic loader's log (LD_DEBUG=files) names every library loaded.
TEST(Cli, LoadsCbcOnlyWhenThePlannerSolves) {
  const CliRun version = shell("LD_DEBUG=files " + std::string(HSPMC_PATH) + " --version");
  ASSERT_EQ(version.code, 0) << version.output;
  EXPECT_NE(version.output.find("file=libc.so"), std::string::npos) << "the log names no library";
  EXPECT_EQ(version.output.find("libCbcSolver"), std::string::npos) << version.output;
  EXPECT_EQ(version.output.find("libcublas"), std::string::npos) << version.output;
  const CliRun plan = shell("LD_DEBUG=files " + std::string(HSPMC_PATH) +
                            " plan examples/gpt/tiny_gpt.hspmd --cluster examples/clusters/cpu_mixed4.toml --seq 64"
                            " --tokens 512 -o build/cli_plan_loads_cbc.hspmd");
  ASSERT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("file=libCbcSolver.so"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("dynamically loaded"), std::string::npos) << plan.output;
}

TEST(Cli, DumpIrOf32BModelHas64Blocks) {
  CliRun run = hspmc("dump-ir examples/llama/llama32b.hspmd");
  ASSERT_EQ(run.code, 0) << run.output.substr(0, 2000);
  EXPECT_NE(run.output.find("%blocks[63].mlp.w1 = param {init = \"normal\", std = 0.02} : f32[5120, 27648]"),
            std::string::npos);
  EXPECT_EQ(run.output.find("%blocks[64]."), std::string::npos);
  EXPECT_EQ(run.output.rfind("graph Llama32B {\n  symbols B, S\n", 0), 0u);
}

TEST(Cli, DumpIrUnderAPlan) {
  CliRun run = hspmc("dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/plans/raw_annotations.hspmd");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("%tokens = input : i32[8, 64] <{ [0, 1]: R | [2, 3]: R } split0 [6, 2]>"),
            std::string::npos)
      << run.output.substr(0, 3000);
  CliRun bad = hspmc("dump-ir examples/gpt/tiny_gpt.hspmd --plan examples/gpt/tiny_gpt.hspmd");
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.output, "examples/gpt/tiny_gpt.hspmd: error: 'examples/gpt/tiny_gpt.hspmd' holds no plan\n");
}

TEST(Cli, LintExitCodes) {
  CliRun clean = hspmc("lint examples/llama/plans/llama32b_hetero48.hspmd");
  EXPECT_EQ(clean.code, 0) << clean.output;
  EXPECT_EQ(clean.output, "lint: 0 errors, 0 warnings\n");
  CliRun broken = hspmc("lint tests/lint/hs110_microbatches.hspmd");
  EXPECT_EQ(broken.code, 1);
  EXPECT_NE(broken.output.find("[HS110]"), std::string::npos) << broken.output;
  CliRun warned = hspmc("lint tests/lint/hs200_no_cluster.hspmd");
  EXPECT_EQ(warned.code, 0) << warned.output;
  EXPECT_EQ(hspmc("lint --werror tests/lint/hs200_no_cluster.hspmd").code, 1);
  CliRun json = hspmc("lint --format json tests/lint/hs110_microbatches.hspmd");
  EXPECT_EQ(json.code, 1);
  EXPECT_NE(json.output.find("\"code\": \"HS110\""), std::string::npos) << json.output;
  CliRun other = hspmc("lint --cluster examples/clusters/h100x4_a100x4.toml examples/gpt/plans/tp2.hspmd");
  EXPECT_EQ(other.code, 0) << other.output;
  EXPECT_EQ(hspmc("lint no/such/plan.hspmd").code, 1);
  // --model must define the plan's model (before, the plan's own import won silently).
  expectRun("lint examples/gpt/plans/single.hspmd --model examples/llama/tiny_llama.hspmd", 1,
            "examples/gpt/plans/single.hspmd:4:17: error: plan 'single' is for model 'TinyGPT', which --model "
            "examples/llama/tiny_llama.hspmd does not define\n  plan single for TinyGPT {\n                  "
            "^~~~~~~\nlint: 1 error, 0 warnings\n");
  EXPECT_EQ(hspmc("lint examples/gpt/plans/single.hspmd --model examples/gpt/tiny_gpt.hspmd").code, 0);
}

TEST(Cli, ExplainReshard) {
  CliRun run = hspmc("explain-reshard --shape 8,16 --from '[0..4]: S0' --to '[0..4]: R'");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("step 1: all-gather"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("the target devices lacked 1536 bytes (minimal)"), std::string::npos) << run.output;
  // To partial sums no bound is claimed: zero-filling in place would move nothing (it said
  // "lacked 384 bytes (minimal)" of the gather to device 0).
  CliRun partial = hspmc("explain-reshard --shape 8,16 --from '[0..4]: S0' --to '[0..4]: P'");
  EXPECT_EQ(partial.code, 0) << partial.output;
  EXPECT_NE(partial.output.find("\ntotal: 384 bytes received, "), std::string::npos) << partial.output;
  EXPECT_EQ(partial.output.find("lacked"), std::string::npos) << partial.output;
  CliRun json = hspmc("explain-reshard --format json --dtype bf16 --shape 8,16 --from '[0..4]: P' --to '[0..4]: S0'");
  EXPECT_EQ(json.code, 0);
  EXPECT_NE(json.output.find("\"kind\": \"reduce-scatter\""), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"bytes_per_device\""), std::string::npos);
  EXPECT_NE(json.output.find("\"groups\""), std::string::npos);
  CliRun badShape = hspmc("explain-reshard --shape 8,x --from '[0]: R' --to '[1]: R'");
  EXPECT_EQ(badShape.code, 1);
  EXPECT_EQ(badShape.output,
            "hspmc explain-reshard: error: --shape must be sizes from 0 to 2^40 separated by commas, like 8,16 (got "
            "'8,x')\n");
  CliRun badFrom = hspmc("explain-reshard --shape 8,16 --from '[0..4]: T0' --to '[1]: R'");
  EXPECT_EQ(badFrom.code, 1);
  EXPECT_EQ(
      badFrom.output,
      "hspmc explain-reshard: error: --from '[0..4]: T0': 1:9: unknown mesh axis 'T0'; expected S<dim>, R or P\n");
  CliRun badSizes = hspmc("explain-reshard --shape 8 --from '{ [0]: R | [1]: R } split0 [3, 4]' --to '[1]: R'");
  EXPECT_EQ(badSizes.code, 1);
  EXPECT_EQ(badSizes.output, "hspmc explain-reshard: error: --from '{ [0]: R | [1]: R } split0 [3, 4]': sizes sum to "
                             "7, but dimension 0 has size 8 [HS105]\n");
  CliRun outside =
      hspmc("explain-reshard --shape 8 --from '[0..4]: S0' --to '[6]: R' --cluster examples/clusters/cpu4.toml");
  EXPECT_EQ(outside.code, 1);
  EXPECT_EQ(outside.output,
            "hspmc explain-reshard: error: device 6 is not in the cluster (cpu4 has devices 0..3) [HS101]\n");
  EXPECT_EQ(hspmc("explain-reshard --shape 8 --from '[0]: R'").code, 2);
  // A cluster file that cannot be read is named (it said "<unknown>: error: ...").
  CliRun unreadable = hspmc("explain-reshard --shape 8 --from '[0]: R' --to '[1]: R' --cluster tests/no-such.toml");
  EXPECT_EQ(unreadable.code, 1);
  EXPECT_EQ(unreadable.output, "tests/no-such.toml: error: cannot read 'tests/no-such.toml'\n");
  CliRun folder = hspmc("explain-reshard --shape 8 --from '[0]: R' --to '[1]: R' --cluster tests/");
  EXPECT_EQ(folder.output, "tests/: error: cannot read 'tests/': it is a directory\n");
}

TEST(Cli, DumpProgram) {
  CliRun run = hspmc("dump-program examples/gpt/plans/cp_asym.hspmd --device 1");
  ASSERT_EQ(run.code, 0) << run.output.substr(0, 2000);
  EXPECT_EQ(run.output.rfind("program device 1 plan 0 peak ", 0), 0u);
  EXPECT_NE(run.output.find("buffer %"), std::string::npos);
  EXPECT_NE(run.output.find("query_offset = 30"), std::string::npos) << run.output.substr(0, 3000);
  CliRun train = hspmc("dump-program examples/gpt/plans/dp2_tp2.hspmd --device 2 --train");
  ASSERT_EQ(train.code, 0);
  EXPECT_NE(train.output.find("split-all-reduce"), std::string::npos);
  // The schedule line docs/cli.md shows: 1F1B for the first of two stages, 4 micro-batches
  // of B = 8 / 4 = 2 samples, one warm-up forward pass.
  CliRun staged = hspmc("dump-program examples/gpt/plans/pipeline2.hspmd --device 0 --train");
  ASSERT_EQ(staged.code, 0);
  EXPECT_NE(staged.output.find("\n  schedule 1f1b stage 0 of 2 microbatches 4 of 2: F0 F1 B0 F2 B1 F3 B2 B3\n"),
            std::string::npos)
      << staged.output.substr(0, 300);
  EXPECT_NE(staged.output.find("\n  backward recv "), std::string::npos);
  EXPECT_NE(staged.output.find("\n  update send "), std::string::npos);
  CliRun absent = hspmc("dump-program examples/gpt/plans/single.hspmd --device 3");
  EXPECT_EQ(absent.code, 1);
  EXPECT_NE(absent.output.find("device 3 takes no part in plan 'single'"), std::string::npos) << absent.output;
  EXPECT_EQ(hspmc("dump-program examples/gpt/plans/single.hspmd").code, 2);
  // A device past int is no device of the plan (it was cut to an int, or CLI11 could not
  // convert it); an empty one is a usage error (CLI11 took it as device 0).
  CliRun past = hspmc("dump-program examples/gpt/plans/single.hspmd --device 4294967296");
  EXPECT_EQ(past.code, 1);
  EXPECT_NE(past.output.find("device 4294967296 takes no part in plan 'single'"), std::string::npos) << past.output;
  CliRun empty = hspmc("dump-program examples/gpt/plans/single.hspmd --device ''");
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(empty.output.substr(0, empty.output.find('\n')), "--device: Value  is not a whole number") << empty.output;
}

// Plans built together (dump-ir's repeated --plan) must make the same graph of the model:
// one that binds the batch otherwise is named at its plan line.
TEST(Cli, PlansBuiltTogetherNeedTheSameModelGraph) {
  std::ifstream in("examples/gpt/plans/single.hspmd");
  std::string single((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [&](const std::string &path, const std::string &name, const std::string &bind) {
    std::string text = single;
    text.replace(text.find("plan single"), 11, "plan " + name);
    text.replace(text.find("bind B = 8"), 10, bind);
    text.replace(text.find("\"../tiny_gpt"), 4, "\"../examples/gpt/");
    text.replace(text.find("\"../../clusters"), 7, "\"../examples/");
    std::ofstream(path) << text;
  };
  write("build/cli_same_a.hspmd", "same_a", "bind B = 8");
  write("build/cli_same_b.hspmd", "same_b", "bind B = 8");
  write("build/cli_other_b.hspmd", "other_b", "bind B = 4");
  const std::string model = "dump-ir examples/gpt/tiny_gpt.hspmd --plan build/cli_same_a.hspmd ";
  EXPECT_EQ(hspmc(model + "--plan build/cli_same_b.hspmd").code, 0);
  expectRun(model + "--plan build/cli_other_b.hspmd", 1,
            "build/cli_other_b.hspmd:4:6: error: plan 'other_b' elaborates the model differently from "
            "plan 'same_a': plans of one build need the same model arguments and bindings\n"
            "  plan other_b for TinyGPT {\n       ^~~~~~~\n");
}

TEST(Cli, DumpIrAfterAPass) {
  CliRun run = hspmc("dump-ir examples/gpt/plans/tp2.hspmd --after deduce-annotations");
  ASSERT_EQ(run.code, 0) << run.output.substr(0, 2000);
  EXPECT_NE(run.output.find("%blocks[0].wqkv = param {init = \"normal\", std = 0.02} : f32[64, 192] <[0, 1]: S1>"),
            std::string::npos);
  EXPECT_EQ(hspmc("dump-ir examples/gpt/plans/tp2.hspmd --after no-such-pass").code, 2);
  CliRun noPlan = hspmc("dump-ir examples/gpt/tiny_gpt.hspmd --after deduce-annotations");
  EXPECT_EQ(noPlan.code, 1);
  EXPECT_NE(noPlan.output.find("--after and --time-passes need a plan"), std::string::npos);
  CliRun timed = hspmc("dump-ir examples/gpt/plans/tp2.hspmd --time-passes");
  EXPECT_EQ(timed.code, 0);
  EXPECT_NE(timed.output.find("pass deduce-annotations: "), std::string::npos);
  EXPECT_EQ(timed.output.find("parameter updates stamped"), std::string::npos); // inference: no updates
  // Specialize's and optimizer-step's lines say how much they stamped (docs/cli.md): most of
  // the ops and updates of a model of identical layers.
  CliRun trained = hspmc("dump-ir examples/gpt/plans/tp2.hspmd --train --time-passes");
  EXPECT_EQ(trained.code, 0);
  auto line = [&trained](const std::string &start) {
    const size_t at = trained.output.find(start);
    return at == std::string::npos ? std::string() : trained.output.substr(at, trained.output.find('\n', at) - at);
  };
  std::smatch ops, updates;
  const std::string specialize = line("pass specialize: "), optimizer = line("pass optimizer-step: ");
  ASSERT_TRUE(std::regex_match(
      specialize, ops,
      std::regex(R"(pass specialize: [0-9.e+-]+ ms \(([0-9]+) of ([0-9]+) op emissions stamped from an op alike\))")))
      << specialize;
  ASSERT_TRUE(std::regex_match(
      optimizer, updates,
      std::regex(
          R"(pass optimizer-step: [0-9.e+-]+ ms \(([0-9]+) of ([0-9]+) parameter updates stamped from one alike\))")))
      << optimizer;
  for (const std::smatch *counts : {&ops, &updates}) {
    EXPECT_GT(std::stoi((*counts)[1]) * 2, std::stoi((*counts)[2]));
    EXPECT_LE(std::stoi((*counts)[1]), std::stoi((*counts)[2]));
  }
}

} // namespace

// The benchmarks' plans (bench/plans, the 1.2B GPT of bench_gpu --mfu among them) lint
// without an error too; a file of models only says it holds no plan.
TEST(Cli, EveryBenchPlanLintsClean) {
  HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF(); // 37 s under the sanitizers, where every example plan lints
  CliRun list = shell("ls bench/plans/*.hspmd bench/plans/*/*.hspmd");
  std::istringstream plans(list.output);
  std::string path;
  int checked = 0;
  while (std::getline(plans, path)) {
    if (readText(path).find("\nplan ") == std::string::npos)
      continue;
    CliRun lint = hspmc("lint " + path);
    EXPECT_EQ(lint.code, 0) << path << "\n" << lint.output;
    EXPECT_NE(lint.output.find("lint: 0 errors"), std::string::npos) << path << "\n" << lint.output;
    ++checked;
  }
  EXPECT_GE(checked, 16);
}

// A plan set (or a cluster file) where a command takes one plan is named as such (it was a
// parse error at its first character, '#'), the same from every command that compiles a plan.
TEST(Cli, APlanSetWhereAPlanIsExpectedIsNamedAsSuch) {
  const std::string set = "examples/llama/plans/tiny_llama_docs.planset.toml";
  const std::string error = set + ": error: '" + set +
                            "' is a plan set, not a plan: hspmc train and hspmc simulate --documents take plan "
                            "sets; here give one of the plans it lists\n";
  expectRun("lint " + set, 1, error + "lint: 1 error, 0 warnings\n");
  for (const std::string &command :
       {"dump-program --device 0 " + set, "dump-ir " + set, "explain-switch examples/gpt/plans/single.hspmd " + set,
        "build --no-compile -o build/cli_build_set " + set})
    expectRun(command, 1, error);
  expectRun("lint examples/clusters/cpu4.toml", 1,
            "examples/clusters/cpu4.toml: error: 'examples/clusters/cpu4.toml' is TOML (a cluster file?), not a plan "
            "(.hspmd)\nlint: 1 error, 0 warnings\n");
}

// hspmc train --device gpu: every device's kernels on a GPU (runtime/gpu/GpuOffload.h). Where
// there is none, it says so before training (CUDA's reason), exit 1; on a GPU the losses are
// the CPU run's within 1e-5. An hspmc without CUDA says so.
TEST(Cli, TrainOnTheGpuOrSayWhyNot) {
  const std::string train = "train examples/gpt/plans/tp2.hspmd --data examples/data/gpl-3.txt --steps 3 --losses ";
  CliRun gpu = hspmc(train + "build/cli_gpu_losses.json --device gpu");
  // the NCCL backend (under mpirun on a machine of GPUs: scripts/gpu-check-multi.sh) is refused alike
  CliRun nccl = hspmc(train + "build/cli_nccl_losses.json --backend nccl");
  expectRun(train + "build/cli_nccl_losses.json --backend nccl --device cpu", 2,
            "hspmc train: error: --backend nccl runs every device on a GPU, and --device cpu asks for the CPU\n");
  // going on after a death too (scripts/gpu-check-multi.sh runs it on four GPUs)
  CliRun recovering =
      hspmc(train + "build/cli_nccl_losses.json --backend nccl --fail 2:1 --recover examples/gpt/plans/single.hspmd");
#ifdef HSPMD_HAVE_CUDA
  if (gpu.code != 0) {
    for (const auto &[run, flag] : {std::pair{&gpu, "--device gpu"}, std::pair{&nccl, "--backend nccl"},
                                    std::pair{&recovering, "--backend nccl"}}) {
      EXPECT_EQ(run->code, 1) << run->output;
      EXPECT_EQ(run->output.rfind("hspmc train: error: " + std::string(flag) + ": no GPU to run on (CUDA: ", 0), 0u)
          << run->output;
      EXPECT_EQ(std::count(run->output.begin(), run->output.end(), '\n'), 1) << run->output;
    }
    return;
  }
  CliRun cpu = hspmc(train + "build/cli_cpu_losses.json");
  ASSERT_EQ(cpu.code, 0) << cpu.output;
  const std::vector<double> want = lossesOf("build/cli_cpu_losses.json"), got = lossesOf("build/cli_gpu_losses.json");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i])) << "step " << i + 1;
#else
  EXPECT_EQ(gpu.code, 1);
  EXPECT_EQ(gpu.output, "hspmc train: error: --device gpu: this hspmc was built without the CUDA toolkit (CMake found "
                        "no nvcc; docs/gpu.md says what it needs)\n");
  for (const CliRun *run : {&nccl, &recovering}) {
    EXPECT_EQ(run->code, 1);
    EXPECT_EQ(run->output, "hspmc train: error: --backend nccl: this hspmc was built without the CUDA toolkit (CMake "
                           "found no nvcc; docs/gpu.md says what it needs)\n");
  }
#endif
}
