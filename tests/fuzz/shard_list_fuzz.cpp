// Fuzzes what a shard `--data` value and a `.shards` list expand to (trainer/data/shard_list.h):
// the brace expansion of a pattern (expand_braces) and the list file's reading (shard_paths on a
// `.shards` file). The input's first line is the pattern, the rest the list file. Refusals are
// std::invalid_argument for a pattern and DataError (MissingData included) for a list; anything
// else escaping, a crash or a sanitizer report is a finding. An accepted pattern gives between 1
// and `limit` names, none with a brace left from a range or a list (a literal brace is refused);
// an accepted list's paths are all non-empty.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "data/data_error.h"
#include "data/shard_list.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t eol = text.find('\n');
  const std::string pattern = text.substr(0, eol);
  const std::string list = eol == std::string::npos ? std::string() : text.substr(eol + 1);
  std::int64_t sum = 0;
  constexpr std::size_t kLimit = 10000;
  try {
    const auto names = dl::data::expand_braces(pattern, kLimit);
    if (names.empty() || names.size() > kLimit) __builtin_trap();
    for (const std::string& n : names) sum += static_cast<std::int64_t>(n.size());
  } catch (const std::invalid_argument&) {
  }
  const std::string path =
      dl::fuzz::write_input("input.shards", data + (size - list.size()), list.size());
  try {
    for (const std::string& p : dl::data::shard_paths(path)) {
      if (p.empty()) __builtin_trap();
      sum += static_cast<std::int64_t>(p.size());
    }
  } catch (const dl::data::DataError&) {
  }
  dl::fuzz::sink = sum;
  return 0;
}
