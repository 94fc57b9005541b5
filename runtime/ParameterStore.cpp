// ParameterStore.cpp - parameters and optimizer state as global tensors, initialization and
// checkpoints (runtime/ParameterStore.h).
#include "runtime/ParameterStore.h"

#include "ir/Files.h"
#include "ir/JsonText.h"
#include "ir/Words.h"

#include <boost/crc.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace hspmd::runtime {

namespace {

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Each tensor's data carries its CRC-32 in the header: a damaged file is an error, not a
// run that silently trains on from wrong values.
// Where a checkpoint's model, "NAME;TENSOR[SHAPE];..." (one entry per parameter), first
// differs from the program's: the model's name, a tensor, or the number of tensors.
std::string modelDifference(const std::string &held, const std::string &needed) {
  auto entries = [](const std::string &model) {
    std::vector<std::string> out;
    for (size_t at = 0;;) {
      const size_t end = model.find(';', at);
      out.push_back(model.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos)
        return out;
      at = end + 1;
    }
  };
  const std::vector<std::string> a = entries(held), b = entries(needed);
  auto quoted = [](const std::string &text) { return "'" + ir::printable(text, 120) + "'"; };
  if (a[0] != b[0])
    return "it holds " + quoted(a[0]) + ", the program trains " + quoted(b[0]);
  for (size_t k = 1; k < a.size() && k < b.size(); ++k)
    if (a[k] != b[k])
      return "its parameter " + std::to_string(k) + " is " + quoted(a[k]) + " where the program's is " + quoted(b[k]);
  return "it holds " + ir::counted(static_cast<int64_t>(a.size() - 1), "parameter") + " of " + quoted(a[0]) +
         ", the program needs " + std::to_string(b.size() - 1);
}

uint32_t crc32(const std::vector<float> &data) {
  boost::crc_32_type crc;
  crc.process_bytes(data.data(), data.size() * sizeof(float));
  return crc.checksum();
}

uint64_t hashName(const std::string &name) {
  uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (unsigned char c : name)
    h = (h ^ c) * 1099511628211ULL;
  return h;
}

} // namespace

std::string ParameterStore::fingerprint(const std::string &modelName, const std::vector<ParamSpec> &params) {
  std::string text = modelName;
  for (const auto &p : params) {
    text += ";" + p.name + "[";
    for (size_t i = 0; i < p.shape.size(); ++i)
      text += (i ? "," : "") + std::to_string(p.shape[i]);
    text += "]";
  }
  return text;
}

ParameterStore ParameterStore::initial(const std::string &model, const std::vector<ParamSpec> &params, uint64_t seed) {
  ParameterStore store;
  store.model = model;
  for (const ParamSpec &p : params) {
    GlobalTensor t{p.shape, {}};
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    t.data.resize(static_cast<size_t>(n));
    uint64_t state = seed * 0x2545F4914F6CDD1DULL ^ hashName(p.name);
    for (int64_t i = 0; i < n; ++i) {
      if (p.init == "ones") {
        t.data[static_cast<size_t>(i)] = 1.0f;
      } else if (p.init == "zeros") {
        t.data[static_cast<size_t>(i)] = 0.0f;
      } else { // normal, by Box-Muller from two 53-bit uniforms
        const double u1 = (static_cast<double>(splitmix(state) >> 11) + 1.0) / 9007199254740993.0;
        const double u2 = static_cast<double>(splitmix(state) >> 11) / 9007199254740992.0;
        t.data[static_cast<size_t>(i)] =
            static_cast<float>(p.std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
      }
    }
    store.tensors[p.name] = std::move(t);
  }
  return store;
}

void ParameterStore::save(const std::string &path) const {
  nlohmann::json header;
  header["format"] = "hspmd-checkpoint-1";
  header["model"] = model;
  header["step"] = step;
  header["tensors"] = nlohmann::json::array();
  for (const auto &[name, t] : tensors)
    header["tensors"].push_back({{"name", name}, {"shape", t.shape}, {"crc32", crc32(t.data)}});
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw CheckpointError(path +
                          ": not a regular file (a checkpoint is renamed onto its path, which would replace it)");
  // Written beside its path under a name of its own (created exclusively: a file of the user's
  // is never written over, and two runs saving to one path do not write into one file), made
  // durable, then renamed onto the path: a crash leaves the old checkpoint or the new one.
  std::string tmp;
  int fd = -1;
  static std::atomic<unsigned> made{0};
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(made++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    throw CheckpointError(path + ": cannot write the checkpoint (" + std::strerror(errno) + ")");
  FILE *out = ::fdopen(fd, "wb");
  if (!out) {
    ::close(fd);
    std::filesystem::remove(tmp, ec);
    throw CheckpointError(path + ": cannot write the checkpoint (" + std::strerror(errno) + ")");
  }
  errno = 0;
  const std::string head = ir::jsonText(header) + "\n";
  bool ok = std::fwrite(head.data(), 1, head.size(), out) == head.size();
  for (const auto &[name, t] : tensors)
    ok = ok && std::fwrite(t.data.data(), sizeof(float), t.data.size(), out) == t.data.size();
  ok = std::fflush(out) == 0 && ok; // a full disk shows in the last bytes too (ir::writeWhole)
  ok = ok && ::fsync(fd) == 0;
  const int error = errno;
  ok = std::fclose(out) == 0 && ok;
  if (!ok) {
    std::filesystem::remove(tmp, ec);
    throw CheckpointError(path + ": writing the checkpoint failed (" +
                          (error   ? std::strerror(error)
                           : errno ? std::strerror(errno)
                                   : "the write failed") +
                          ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int renameError = errno;
    std::filesystem::remove(tmp, ec);
    throw CheckpointError(path + ": cannot move the checkpoint into place (" + std::strerror(renameError) + ")");
  }
}

ParameterStore ParameterStore::load(const std::string &path, const std::string &model) {
  if (std::string why = ir::notAFile(path); !why.empty())
    throw CheckpointError(path + ": " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw CheckpointError(path + ": cannot open the checkpoint");
  std::string line;
  std::getline(in, line);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception &) {
    throw CheckpointError(path + ": not an hspmd checkpoint (its first line is not a JSON header)");
  }
  // A field of an object of the header, null where it is missing (operator[] of a const json
  // must not be asked for a key it lacks).
  auto field = [](const nlohmann::json &object, const char *key) -> const nlohmann::json & {
    static const nlohmann::json missing;
    const auto it = object.find(key);
    return it == object.end() ? missing : *it;
  };
  if (!header.is_object() || field(header, "format") != "hspmd-checkpoint-1")
    throw CheckpointError(path + ": not an hspmd checkpoint (format is not hspmd-checkpoint-1)");
  if (!field(header, "model").is_string())
    throw CheckpointError(path + ": the checkpoint's header names no model");
  ParameterStore store;
  store.model = header["model"].get<std::string>();
  if (store.model != model)
    throw CheckpointError(path + ": the checkpoint is of another model: " + modelDifference(store.model, model));
  // The header is checked whole before any data is read: its step, and each tensor's name
  // (once) and shape (non-negative sizes whose bytes fit).
  const nlohmann::json &step = field(header, "step");
  if (!step.is_number_integer() || step.get<int64_t>() < 0)
    throw CheckpointError(path + ": the checkpoint's step must be a whole number of at least 0, got " +
                          step.dump().substr(0, 40));
  store.step = step.get<int64_t>();
  const nlohmann::json &tensors = field(header, "tensors");
  if (!tensors.is_array())
    throw CheckpointError(path + ": the checkpoint's header has no list of tensors");
  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    uint32_t crc32;
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const auto &entry : tensors) {
    if (!entry.is_object() || !field(entry, "name").is_string() || !field(entry, "shape").is_array())
      throw CheckpointError(path +
                            ": a tensor of the header has no name or no shape: " + ir::printable(entry.dump(), 80));
    const std::string name = entry["name"].get<std::string>(), quoted = "'" + ir::printable(name, 120) + "'";
    if (!names.insert(name).second)
      throw CheckpointError(path + ": tensor " + quoted + " is in the checkpoint twice");
    const nlohmann::json &crc = field(entry, "crc32");
    if (!crc.is_number_unsigned() || crc.get<uint64_t>() > 0xffffffffu)
      throw CheckpointError(path + ": tensor " + quoted + " has no crc32 (its data's CRC-32) in the header");
    std::vector<int64_t> shape;
    int64_t bytes = 4;
    for (const auto &size : field(entry, "shape")) {
      if (!size.is_number_integer() || size.get<int64_t>() < 0 ||
          __builtin_mul_overflow(bytes, size.get<int64_t>(), &bytes) || bytes > (int64_t{1} << 48))
        throw CheckpointError(path + ": tensor " + quoted +
                              " has a shape no tensor can have: " + ir::printable(field(entry, "shape").dump(), 80));
      shape.push_back(size.get<int64_t>());
    }
    entries.push_back({name, std::move(shape), crc.get<uint32_t>()});
  }
  // The data must be exactly what the header lists (checked before anything is allocated).
  int64_t listed = 0;
  for (const auto &[name, shape, crc] : entries) {
    int64_t bytes = 4;
    for (int64_t d : shape)
      bytes *= d;
    if (__builtin_add_overflow(listed, bytes, &listed))
      throw CheckpointError(path + ": the checkpoint's header lists more data than a file can hold");
  }
  const std::streamoff dataStart = in.tellg();
  in.seekg(0, std::ios::end);
  const int64_t held = static_cast<int64_t>(in.tellg() - dataStart);
  in.seekg(dataStart);
  if (held != listed)
    throw CheckpointError(path + ": the checkpoint's header lists " + std::to_string(listed) +
                          " bytes of tensors, the file holds " + std::to_string(held));
  for (auto &[name, shape, crc] : entries) {
    const std::string quoted = "'" + ir::printable(name, 120) + "'";
    GlobalTensor t{shape, {}};
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    t.data.resize(static_cast<size_t>(n));
    in.read(reinterpret_cast<char *>(t.data.data()), static_cast<std::streamsize>(n * 4));
    if (!in)
      throw CheckpointError(path + ": the checkpoint ends inside tensor " + quoted);
    if (crc32(t.data) != crc)
      throw CheckpointError(path + ": tensor " + quoted + " is damaged: its data's CRC-32 is not the header's");
    if (auto bad = std::find_if(t.data.begin(), t.data.end(), [](float x) { return !std::isfinite(x); });
        bad != t.data.end())
      throw CheckpointError(path + ": tensor " + quoted + " holds " + (std::isnan(*bad) ? "NaN" : "an infinity") +
                            " at element " + std::to_string(bad - t.data.begin()) +
                            " (saved from a run that diverged?); training from it would give NaN losses");
    store.tensors[name] = std::move(t);
  }
  return store;
}

} // namespace hspmd::runtime
