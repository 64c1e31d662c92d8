// `dl-train pack` (see pack_mode.h).
#include "train/modes/pack_mode.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "core/errors.h"
#include "data/data_error.h"
#include "data/data_set.h"
#include "data/shard_pack.h"

namespace dl::train {
namespace {

// "256MB", "1GiB", "500k", "1000000": bytes (decimal k/M/G, binary Ki/Mi/Gi; a trailing B).
std::uint64_t parse_size(const std::string& text) {
  std::size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  static const std::map<std::string, double> units = {
      {"", 1},    {"k", 1e3},   {"K", 1e3},        {"M", 1e6},
      {"G", 1e9}, {"Ki", 1024}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
  const auto it = units.find(unit);
  if (end == 0 || it == units.end() || v * it->second < 1) {
    throw UserError(exit_code::kUsage,
                    "--shard-size " + text + ": expected a size such as 256MB, 1GiB or 100000");
  }
  return static_cast<std::uint64_t>(v * it->second);
}

int parse_int(const std::string& option, const std::string& text, int lo, int hi) {
  try {
    std::size_t end = 0;
    const int v = std::stoi(text, &end);
    if (end == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw UserError(exit_code::kUsage, option + " " + text + ": expected a whole number from " +
                                         std::to_string(lo) + " to " + std::to_string(hi));
}

std::string mb(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

bool has_shards(const std::string& dir, const std::string& prefix) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > 4 &&
        name.compare(name.size() - 4, 4, ".tar") == 0) {
      found = true;
    }
  }
  closedir(d);
  return found;
}

}  // namespace

std::string pack_usage() {
  return "Usage: dl-train pack --data SRC --out DIR [options]\n"
         "Writes the data set SRC (anything --data takes) as WebDataset shards "
         "DIR/<prefix>NNNNNN.tar:\n"
         "each sample <key>.<jpg|png|...> and <key>.cls, in the data set's order.\n\n"
         "  --data SRC          the data set to pack\n"
         "  --out DIR           where the shards go (created if missing)\n"
         "  --split train|val   which part (default train; val: the data set's own validation "
         "part)\n"
         "  --shard-size SIZE   a shard closes past this size (default 256MB; 1GiB, 100000, ...)\n"
         "  --max-side N        re-encode images larger than N px on their long side as JPEG\n"
         "  --quality Q         JPEG quality when re-encoding (default 90)\n"
         "  --prefix NAME       shard names' prefix (default: the split and a dash, train-)\n"
         "  --overwrite         replace shards with that prefix already in DIR\n";
}

namespace {

struct PackArgs {
  bool help = false;
  bool overwrite = false;
  std::string data;
  std::string split = "train";
  data::PackOptions options;
};

// --key value and --key=value; --help and --overwrite alone.
PackArgs parse_pack_args(int argc, const char* const argv[]) {
  PackArgs args;
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
      return args;
    }
    if (arg == "--overwrite") {
      args.overwrite = true;
      continue;
    }
    std::string value;
    const std::size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UserError(exit_code::kUsage, arg + ": expected a value; see dl-train pack --help");
    }
    static const char* const known[] = {"--data",     "--out",     "--split", "--shard-size",
                                        "--max-side", "--quality", "--prefix"};
    if (std::find(std::begin(known), std::end(known), arg) == std::end(known)) {
      throw UserError(exit_code::kUsage,
                      "unrecognised option '" + arg + "'; see dl-train pack --help");
    }
    values[arg] = value;
  }
  if (!values.count("--data") || !values.count("--out")) {
    throw UserError(exit_code::kUsage,
                    "pack needs --data SRC and --out DIR; see dl-train pack --help");
  }
  args.data = values["--data"];
  if (values.count("--split")) args.split = values["--split"];
  if (args.split != "train" && args.split != "val") {
    throw UserError(exit_code::kUsage, "--split " + args.split + ": expected train or val");
  }
  data::PackOptions& o = args.options;
  o.out_dir = values["--out"];
  o.prefix = values.count("--prefix") ? values["--prefix"] : args.split + "-";
  if (o.prefix.find('/') != std::string::npos) {
    throw UserError(exit_code::kUsage, "--prefix " + o.prefix + ": expected a name, no /");
  }
  if (values.count("--shard-size")) o.shard_bytes = parse_size(values["--shard-size"]);
  if (values.count("--max-side")) {
    o.max_side = parse_int("--max-side", values["--max-side"], 1, 1 << 16);
  }
  if (values.count("--quality")) o.quality = parse_int("--quality", values["--quality"], 1, 100);
  return args;
}

// The part of the data set to pack, its warnings logged.
std::unique_ptr<data::SampleSource> open_part(const PackArgs& args) {
  data::ImageFileOptions files;
  files.warn = [](const std::string& line) { spdlog::warn("{}", line); };
  data::DataSet set;
  try {
    set = data::open_data_set(args.data, files);
  } catch (const data::MissingData& e) {
    throw UserError(exit_code::kMissing, e.what());
  } catch (const data::DataError& e) {
    throw UserError(exit_code::kBadData, e.what());
  }
  std::unique_ptr<data::SampleSource> part =
      args.split == "train" ? std::move(set.train) : std::move(set.val);
  if (!part) {
    throw UserError(exit_code::kMissing,
                    "--split val: data " + args.data + " has no validation part of its own");
  }
  return part;
}

// --out made if missing; shards with the prefix there already need --overwrite.
void prepare_out_dir(const PackArgs& args) {
  const data::PackOptions& o = args.options;
  struct stat st {};
  if (stat(o.out_dir.c_str(), &st) != 0 && mkdir(o.out_dir.c_str(), 0755) != 0) {
    throw UserError(exit_code::kCantWrite, "--out " + o.out_dir + ": cannot be created");
  }
  if (!args.overwrite && has_shards(o.out_dir, o.prefix)) {
    throw UserError(exit_code::kRunExists, "--out " + o.out_dir + " holds " + o.prefix +
                                               "*.tar shards already; --overwrite replaces them");
  }
}

// On a terminal a line redrawn at each percent; elsewhere (a log) one line each 10%.
std::function<void(std::int64_t, std::int64_t, std::uint64_t)> progress_line(bool tty) {
  auto shown = std::make_shared<std::int64_t>(-1);
  return [tty, shown](std::int64_t done, std::int64_t total, std::uint64_t bytes) {
    const std::int64_t step = tty ? 100 : 10;
    const std::int64_t at = total > 0 ? done * step / total : step;
    if (at == *shown) return;
    *shown = at;
    std::fprintf(stderr, "%spack %lld/%lld samples (%lld%%), %s%s", tty ? "\r" : "",
                 static_cast<long long>(done), static_cast<long long>(total),
                 static_cast<long long>(total > 0 ? done * 100 / total : 100), mb(bytes).c_str(),
                 tty ? "" : "\n");
  };
}

// "packed 200 samples (10 classes) into 6 shard(s), 25.9 MB, in 0.04 s (5045 samples/s):
// out/train-{000000..000005}.tar"
std::string summary_line(const data::PackSummary& s, const data::PackOptions& o, double seconds) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.0f",
                seconds > 0 ? static_cast<double>(s.samples) / seconds : 0.0);
  std::string pattern = o.out_dir + "/" + o.prefix;
  if (s.shards.size() == 1) {
    pattern += "000000.tar";
  } else {
    char last[16];
    std::snprintf(last, sizeof last, "%06zu", s.shards.size() - 1);
    pattern += "{000000.." + std::string(last) + "}.tar";
  }
  return "packed " + std::to_string(s.samples) + " samples (" + std::to_string(s.classes) +
         " classes) into " + std::to_string(s.shards.size()) + " shard(s), " + mb(s.bytes) +
         ", in " + secs + " s (" + rate + " samples/s)" +
         (s.skipped ? ", " + std::to_string(s.skipped) + " unreadable sample(s) left out" : "") +
         ": " + (s.shards.empty() ? "no shard written" : pattern);
}

}  // namespace

int run_pack(int argc, const char* const argv[]) {
  PackArgs args = parse_pack_args(argc, argv);
  if (args.help) {
    std::cout << pack_usage();
    return exit_code::kOk;
  }
  const std::unique_ptr<data::SampleSource> source = open_part(args);
  prepare_out_dir(args);
  const bool tty = isatty(STDERR_FILENO) != 0;
  args.options.progress = progress_line(tty);
  const auto t0 = std::chrono::steady_clock::now();
  data::PackSummary s;
  try {
    s = data::pack_shards(*source, args.options);
  } catch (const std::invalid_argument& e) {
    throw UserError(exit_code::kUsage, e.what());
  } catch (const std::runtime_error& e) {
    throw UserError(exit_code::kCantWrite, e.what());
  }
  if (tty) std::fprintf(stderr, "\n");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << summary_line(s, args.options, seconds) << "\n";
  return s.samples > 0 ? exit_code::kOk : exit_code::kBadData;
}

}  // namespace dl::train
