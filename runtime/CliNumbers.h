// CliNumbers.h - whole-number options of hspmc and the generated binaries that may go up to
// int64's largest (--steps): CLI11 turns a larger number into the largest silently (--steps
// 99999999999999999999 ran as 9223372036854775807 steps), so the text is checked before it
// is converted.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace hspmd::runtime {

/// A whole number from `least` to 9223372036854775807; the message is CLI11's Range's.
inline CLI::Validator int64AtLeast(int64_t least) {
  const std::string range = std::to_string(least) + " to " + std::to_string(std::numeric_limits<int64_t>::max());
  return CLI::Validator(
      [range, least](std::string &text) -> std::string {
        int64_t value = 0;
        const char *begin = text.data(), *end = begin + text.size();
        if (text.size() > 1 && text[0] == '+' && text[1] != '-')
          ++begin; // +3, as CLI11 takes it
        const auto [at, error] = std::from_chars(begin, end, value);
        if (error == std::errc::invalid_argument || at != end)
          return "Value " + text + " is not a whole number";
        return error == std::errc() && value >= least ? "" : "Value " + text + " not in range " + range;
      },
      "INT in [" + range + "]");
}

/// A whole number from 0 to 18446744073709551615 (--seed): CLI11 took -5 as 2^64 - 5 and
/// 2^64 as some other seed, silently.
inline CLI::Validator uint64Whole() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        uint64_t value = 0;
        const char *begin = text.data(), *end = begin + text.size();
        if (text.size() > 1 && text[0] == '+')
          ++begin; // +5, as --steps takes +3
        const auto [at, error] = std::from_chars(begin, end, value);
        if (error == std::errc::invalid_argument || at != end)
          return "Value " + text + " is not a whole number from 0";
        return error == std::errc() ? "" : "Value " + text + " not in range 0 to 18446744073709551615";
      },
      "UINT in [0 to 18446744073709551615]");
}

/// Parses the command line of hspmc or a generated binary: nothing to go on with, else the exit
/// code after CLI11 said why: 0 for --help, 2 for a usage error (CLI11's own codes otherwise).
inline std::optional<int> parseCommandLine(CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &success) {
    return app.exit(success);
  } catch (const CLI::ParseError &error) {
    app.exit(error);
    return 2;
  }
  return std::nullopt;
}

} // namespace hspmd::runtime
