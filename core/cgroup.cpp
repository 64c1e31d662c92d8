// cgroup v1/v2 limit discovery, written against the Host interface so fake trees can test it.
#include "core/cgroup.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/text.h"

namespace dl {
namespace {

// cgroup v1 reports "no limit" as a page-rounded LONG_MAX; anything this large is no limit.
constexpr std::uint64_t kUnlimitedFloor = std::uint64_t{1} << 60;

// Decodes mountinfo's octal escapes ("\040" is a space).
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && is_digit(s[i + 1]) && is_digit(s[i + 2]) &&
        is_digit(s[i + 3])) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct ProcCgroups {
  std::map<std::string, std::string> v1;  // controller -> path
  std::optional<std::string> v2;          // the unified path
};

ProcCgroups parse_proc_cgroup(const std::string& text) {
  ProcCgroups result;
  for (const auto& line : split(text, '\n')) {
    // "hierarchy-id:controller,list:/path"; the path may itself contain ':'.
    const auto first = line.find(':');
    if (first == std::string::npos) continue;
    const auto second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      result.v2 = path;
      continue;
    }
    for (const auto& c : split(controllers, ',')) {
      if (!c.empty()) result.v1[c] = path;
    }
  }
  return result;
}

// Directories from the process's own cgroup up to the mount point, innermost first.
std::vector<std::string> cgroup_dirs(const CgroupMount& mount, const std::string& path) {
  std::string relative;
  if (mount.root == "/") {
    relative = path;
  } else if (path.compare(0, mount.root.size(), mount.root) == 0) {
    relative = path.substr(mount.root.size());
  }
  // Otherwise the process's cgroup lies outside what is mounted (a container without a cgroup
  // namespace sees its own cgroup mounted as the root): the mount point is the best we have.
  if (relative == "/") relative.clear();
  std::vector<std::string> dirs;
  std::string dir = mount.mount_point + relative;
  while (true) {
    dirs.push_back(dir);
    if (dir.size() <= mount.mount_point.size()) break;
    dir = dir.substr(0, dir.rfind('/'));
  }
  return dirs;
}

std::optional<std::uint64_t> read_u64(const Host& host, const std::string& file) {
  const auto text = host.read_file(file);
  if (!text) return std::nullopt;
  return parse_u64(trim(*text));
}

// Sum of "key value" lines named `key` in a memory.stat file.
std::optional<std::uint64_t> stat_value(const Host& host, const std::string& file,
                                        const std::string& key) {
  const auto text = host.read_file(file);
  if (!text) return std::nullopt;
  for (const auto& line : split(*text, '\n')) {
    const auto space = line.find(' ');
    if (space != std::string::npos && line.compare(0, space, key) == 0) {
      return parse_u64(trim(line.substr(space + 1)));
    }
  }
  return std::nullopt;
}

struct Hierarchy {
  int version = 0;
  std::vector<std::string> dirs;  // innermost first; empty when the controller is not mounted
};

Hierarchy find_v2(const std::vector<CgroupMount>& mounts, const ProcCgroups& procs) {
  Hierarchy h;
  if (!procs.v2) return h;
  for (const auto& m : mounts) {
    if (m.fs_type == "cgroup2") {
      h.version = 2;
      h.dirs = cgroup_dirs(m, *procs.v2);
      return h;
    }
  }
  return h;
}

Hierarchy find_v1(const std::vector<CgroupMount>& mounts, const ProcCgroups& procs,
                  const std::string& controller) {
  Hierarchy h;
  for (const auto& m : mounts) {
    if (m.fs_type != "cgroup") continue;
    if (std::find(m.controllers.begin(), m.controllers.end(), controller) == m.controllers.end())
      continue;
    const auto it = procs.v1.find(controller);
    h.version = 1;
    h.dirs = cgroup_dirs(m, it == procs.v1.end() ? "/" : it->second);
    return h;
  }
  return h;
}

// Without a readable mountinfo, assume the conventional mount points.
std::vector<CgroupMount> default_mounts(const Host& host) {
  if (host.read_file("/sys/fs/cgroup/cgroup.controllers")) {
    return {{"/", "/sys/fs/cgroup", "cgroup2", {}}};
  }
  return {{"/", "/sys/fs/cgroup/cpu", "cgroup", {"cpu"}},
          {"/", "/sys/fs/cgroup/memory", "cgroup", {"memory"}}};
}

void read_cpu(const Host& host, const Hierarchy& v2, const Hierarchy& v1, CgroupLimits* out) {
  for (const auto& dir : v2.dirs) {
    const auto text = host.read_file(dir + "/cpu.max");
    if (!text) continue;
    const auto fields = split(trim(*text), ' ');
    if (fields.size() != 2 || fields[0] == "max") continue;
    const auto quota = parse_u64(fields[0]);
    const auto period = parse_u64(fields[1]);
    if (!quota || !period || *period == 0) continue;
    const double cpus = static_cast<double>(*quota) / static_cast<double>(*period);
    if (!out->cpu_quota || cpus < *out->cpu_quota) {
      out->cpu_quota = cpus;
      out->cpu_source = dir + "/cpu.max";
    }
  }
  if (out->cpu_quota) return;
  for (const auto& dir : v1.dirs) {
    const auto text = host.read_file(dir + "/cpu.cfs_quota_us");
    if (!text) continue;
    const auto quota = parse_i64(trim(*text));
    const auto period = read_u64(host, dir + "/cpu.cfs_period_us");
    if (!quota || *quota <= 0 || !period || *period == 0) continue;  // -1: no quota
    const double cpus = static_cast<double>(*quota) / static_cast<double>(*period);
    if (!out->cpu_quota || cpus < *out->cpu_quota) {
      out->cpu_quota = cpus;
      out->cpu_source = dir + "/cpu.cfs_quota_us";
    }
  }
}

void read_memory(const Host& host, const Hierarchy& v2, const Hierarchy& v1, CgroupLimits* out) {
  // v2 first; in a hybrid layout the unified hierarchy has no memory files and v1 answers.
  struct Files {
    const Hierarchy* h;
    const char* limit;
    const char* usage;
    const char* inactive;
  };
  for (const Files& f :
       {Files{&v2, "memory.max", "memory.current", "inactive_file"},
        Files{&v1, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}}) {
    bool seen = false;
    for (const auto& dir : f.h->dirs) {
      const auto text = host.read_file(dir + "/" + f.limit);
      if (!text) continue;
      seen = true;
      const auto limit = parse_u64(trim(*text));  // "max" (v2) does not parse: no limit
      if (!limit || *limit >= kUnlimitedFloor) continue;
      if (!out->memory_limit || *limit < *out->memory_limit) {
        out->memory_limit = *limit;
        out->memory_source = dir + "/" + f.limit;
      }
    }
    if (!seen) continue;
    const std::string leaf = f.h->dirs.front();
    if (const auto used = read_u64(host, leaf + "/" + f.usage)) {
      // Page cache the kernel can drop is not memory the trainer lacks (as `docker stats`).
      const auto inactive = stat_value(host, leaf + "/memory.stat", f.inactive).value_or(0);
      out->memory_used = *used > inactive ? *used - inactive : 0;
    }
    return;
  }
}

}  // namespace

std::vector<CgroupMount> parse_cgroup_mounts(const std::string& mountinfo) {
  std::vector<CgroupMount> mounts;
  for (const auto& line : split(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || fields.end() - dash < 2) continue;
    const std::string fs_type = *(dash + 1);
    if (fs_type != "cgroup" && fs_type != "cgroup2") continue;
    CgroupMount m;
    m.root = unescape_octal(fields[3]);
    m.mount_point = unescape_octal(fields[4]);
    m.fs_type = fs_type;
    if (fs_type == "cgroup" && fields.end() - dash > 3) {
      for (const auto& opt : split(*(dash + 3), ',')) {
        if (opt != "rw" && opt != "ro") m.controllers.push_back(opt);
      }
    }
    mounts.push_back(m);
  }
  return mounts;
}

CgroupLimits read_cgroup_limits(const Host& host) {
  CgroupLimits limits;
  const auto mountinfo = host.read_file("/proc/self/mountinfo");
  auto mounts = mountinfo ? parse_cgroup_mounts(*mountinfo) : std::vector<CgroupMount>{};
  if (mounts.empty()) mounts = default_mounts(host);
  const auto proc_text = host.read_file("/proc/self/cgroup");
  ProcCgroups procs = proc_text ? parse_proc_cgroup(*proc_text) : ProcCgroups{};
  if (!proc_text) procs.v2 = "/";

  const Hierarchy v2 = find_v2(mounts, procs);
  const Hierarchy cpu_v1 = find_v1(mounts, procs, "cpu");
  const Hierarchy mem_v1 = find_v1(mounts, procs, "memory");
  read_cpu(host, v2, cpu_v1, &limits);
  read_memory(host, v2, mem_v1, &limits);

  // A hybrid layout mounts cgroup2 too, but with the cpu and memory controllers left in v1.
  const auto controllers =
      v2.dirs.empty() ? std::string{}
                      : host.read_file(v2.dirs.back() + "/cgroup.controllers").value_or("");
  bool v2_governs = false;
  for (const auto& c : split(trim(controllers), ' ')) v2_governs |= c == "cpu" || c == "memory";
  if (v2_governs) {
    limits.version = 2;
  } else if (cpu_v1.version == 1 || mem_v1.version == 1) {
    limits.version = 1;
  } else {
    limits.version = v2.version;
  }
  return limits;
}

}  // namespace dl
