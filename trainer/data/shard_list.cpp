// The shard files a `--data` value names (see shard_list.h).
#include "data/shard_list.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/text.h"
#include "data/data_error.h"
#include "data/remote_store.h"
#include "data/skip_reason.h"

namespace dl::data {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The alternatives one brace body stands for, at most `limit` (a range is counted before any name
// is made: {0..999999999} would otherwise build a billion strings to refuse them).
std::vector<std::string> alternatives(const std::string& body, const std::string& pattern,
                                      std::size_t limit) {
  const std::size_t dots = body.find("..");
  if (dots == std::string::npos) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = body.find(',', start);
      out.push_back(body.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }
  const std::string a = body.substr(0, dots);
  const std::string b = body.substr(dots + 2);
  if (!all_digits(a) || !all_digits(b)) {
    throw std::invalid_argument("shards " + pattern + ": {" + body +
                                "}: expected a range of whole numbers, as {000000..000146}");
  }
  const std::uint64_t from = std::stoull(a);
  const std::uint64_t to = std::stoull(b);
  if (from > to) {
    throw std::invalid_argument("shards " + pattern + ": {" + body + "}: the range runs backwards");
  }
  // Zero-padded ends keep their width, as braceexpand (webdataset's) does.
  const bool pad = (a.size() > 1 && a[0] == '0') || (b.size() > 1 && b[0] == '0');
  const std::size_t width = pad ? std::max(a.size(), b.size()) : 0;
  if (to - from >= limit) {
    throw std::invalid_argument("shards " + pattern + ": {" + body + "}: more than " +
                                std::to_string(limit) + " names; expected at most " +
                                std::to_string(limit) +
                                " (a .shards list, one a line, names more)");
  }
  std::vector<std::string> out;
  for (std::uint64_t v = from; v <= to; ++v) out.push_back(zero_padded(v, width));
  return out;
}

std::vector<std::string> tar_files_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || !ends_with(name, ".tar")) continue;
    struct stat st {};
    if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  for (auto& name : out) name = dir + "/" + name;
  return out;
}

bool has_folders_besides_splits(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool other = false;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name == "train" || name == "val") continue;
    if (is_dir(dir + "/" + name)) other = true;
  }
  closedir(d);
  return other;
}

bool remote(const std::string& location) {
  return is_remote(location);
}

std::string local(const std::string& location) {
  return starts_with(location, "file://") ? location.substr(7) : location;
}

// The shards a list names, one a line (`#` comments and blank lines skipped), each relative to
// `base` (the list's folder or URL prefix) unless absolute. A remote list names remote shards
// only: a local path or file:// from a server is refused.
std::vector<std::string> list_entries(const std::string& text, const std::string& base,
                                      const std::string& list, bool from_remote) {
  std::vector<std::string> paths;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::string entry = line.substr(first);
    if (remote(entry)) {
      paths.push_back(entry);
      continue;
    }
    if (from_remote && (starts_with(entry, "file://") || entry.front() == '/' ||
                        entry.find("://") != std::string::npos)) {
      throw DataError("shard list " + list + ": names " + printable_path(entry) +
                      "; a remote list may name only http(s):// and s3:// shards");
    }
    entry = local(entry);
    if (entry.front() != '/') entry = base + entry;
    paths.push_back(entry);
  }
  if (paths.empty()) throw DataError("shard list " + printable_path(list) + ": names no shard");
  return paths;
}

// The shards a remote location names: braces expanded, a list fetched, else the one URL.
std::vector<std::string> remote_shards(const std::string& location) {
  if (location.find('{') != std::string::npos) {
    try {
      return expand_braces(location);
    } catch (const std::invalid_argument& e) {
      throw DataError(e.what());
    }
  }
  const std::size_t slash = location.rfind('/');
  if (ends_with(location, ".shards") || ends_with(location, ".txt")) {
    return list_entries(fetch_text(location), location.substr(0, slash + 1), location, true);
  }
  if (ends_with(location, "/")) {
    throw DataError("shards " + location +
                    ": a remote folder cannot be listed; name its shards with braces "
                    "(train-{000000..000146}.tar) or a .shards list");
  }
  return {location};
}

void check_shard(const std::string& path, const std::string& from) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw MissingData("shard " + printable_path(path) + " (from " + printable_path(from) +
                      "): no such file");
  }
  if (!S_ISREG(st.st_mode)) {
    throw DataError("shard " + printable_path(path) + " (from " + printable_path(from) +
                    "): not a regular file");
  }
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern, std::size_t limit) {
  const std::size_t open = pattern.find('{');
  const std::size_t close = pattern.find('}');
  if (open == std::string::npos && close == std::string::npos) return {pattern};
  if (open == std::string::npos || close == std::string::npos || close < open) {
    throw std::invalid_argument("shards " + pattern + ": unbalanced braces");
  }
  const std::string body = pattern.substr(open + 1, close - open - 1);
  if (body.find('{') != std::string::npos) {
    throw std::invalid_argument("shards " + pattern + ": nested braces");
  }
  if (body.empty()) throw std::invalid_argument("shards " + pattern + ": an empty {}");
  const std::vector<std::string> rest = expand_braces(pattern.substr(close + 1), limit);
  std::vector<std::string> out;
  for (const std::string& a : alternatives(body, pattern, limit)) {
    for (const std::string& r : rest) {
      if (out.size() >= limit) {
        throw std::invalid_argument("shards " + pattern + ": more than " + std::to_string(limit) +
                                    " names; expected at most " + std::to_string(limit) +
                                    " (a .shards list, one a line, names more)");
      }
      out.push_back(pattern.substr(0, open) + a + r);
    }
  }
  return out;
}

bool names_shards(const std::string& location) {
  if (location.find('{') != std::string::npos || remote(location) ||
      starts_with(location, "file://") || ends_with(location, ".tar") ||
      ends_with(location, ".shards")) {
    return true;
  }
  if (!is_dir(location)) return false;
  if (!tar_files_in(location).empty()) return !has_folders_besides_splits(location);
  return is_dir(location + "/train") && !tar_files_in(location + "/train").empty();
}

std::vector<std::string> shard_paths(const std::string& location) {
  if (remote(location)) return remote_shards(location);
  const std::string where = local(location);
  std::vector<std::string> paths;
  if (where.find('{') != std::string::npos) {
    try {
      paths = expand_braces(where);
    } catch (const std::invalid_argument& e) {
      throw DataError(e.what());
    }
  } else if (is_dir(where)) {
    paths = tar_files_in(where);
    if (paths.empty()) {
      throw DataError("shards " + printable_path(where) + ": a folder without .tar files");
    }
  } else if (ends_with(where, ".shards")) {
    std::ifstream in(where);
    if (!in) throw MissingData("shard list " + printable_path(where) + ": cannot be read");
    const std::size_t slash = where.rfind('/');
    const std::string base = slash == std::string::npos ? "" : where.substr(0, slash + 1);
    std::ostringstream text;
    text << in.rdbuf();
    paths = list_entries(text.str(), base, where, false);
  } else {
    paths = {where};
  }
  for (const std::string& p : paths) {
    if (!remote(p)) check_shard(p, location);
  }
  if (std::any_of(paths.begin(), paths.end(), remote) &&
      !std::all_of(paths.begin(), paths.end(), remote)) {
    throw DataError("shard list " + printable_path(location) +
                    ": mixes local and remote shards; give one kind");
  }
  return paths;
}

}  // namespace dl::data
