// Fuzzes the config file parser (Layers::add_config_file, which reads a workspace's dl.conf): the
// input is the file. UserError is the parser's documented refusal (65 malformed or an unknown
// key); anything else escaping, a crash or a sanitizer report is a finding. An accepted file's
// values are read back through every validated read, whose refusal is UserError (64) too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/settings.h"
#include "fuzz_files.h"

namespace {

// One validated read: a UserError is the read refusing the file's value, which is fine.
template <class Read>
void read(Read&& r) {
  try {
    r();
  } catch (const dl::UserError& e) {
    if (e.code() != dl::exit_code::kUsage) __builtin_trap();  // reads refuse with 64 only
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = dl::fuzz::write_input("dl.conf", data, size);
  dl::settings::Layers layers;
  try {
    if (!layers.add_config_file(path, /*required=*/true)) __builtin_trap();  // it exists
  } catch (const dl::UserError& e) {
    if (e.code() != dl::exit_code::kBadConfig) __builtin_trap();  // the file is there and readable
    return 0;
  }
  for (const auto& option : dl::settings::all().options()) {
    const std::string key = option->long_name();
    if (layers.has(key) != layers.config_file_sets(key)) __builtin_trap();  // one layer only
    dl::fuzz::sink = static_cast<std::int64_t>(layers.get(key).size() + layers.source(key).size());
    read([&] { dl::fuzz::sink = layers.integer(key, 0, 1000000, true).value_or(0); });
    read([&] { dl::fuzz::sink = layers.real(key, -1.0, 1.0).has_value(); });
    read([&] { dl::fuzz::sink = layers.flag(key).value_or(false); });
    read([&] { dl::fuzz::sink = layers.one_of(key, {"auto", "cpu"}, "auto").size(); });
  }
  return 0;
}
