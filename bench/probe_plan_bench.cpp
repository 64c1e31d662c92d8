// Probe + plan latency: the launcher's start-up cost before the trainer starts, against its
// 50 ms budget. Reports medians and the 95th percentile over many repetitions, broken down by
// part, and the whole `dl-launch --dry-run` process against a bare process start (/bin/true) in
// the same sitting, alternating the two.
//
//   probe_plan_bench [--repeat N] [--launcher PATH]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/cgroup.h"
#include "core/probe.h"
#include "core/system_host.h"
#include "launcher/plan.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kBudgetMs = 50.0;

struct Stats {
  double median = 0, p95 = 0, max = 0;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s;
  s.median = ms[ms.size() / 2];
  s.p95 = ms[std::min(ms.size() - 1, ms.size() * 95 / 100)];
  s.max = ms.back();
  return s;
}

double time_ms(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void row(const char* what, const Stats& s, bool budget) {
  std::printf("| %-34s | %9.3f | %9.3f | %9.3f |", what, s.median, s.p95, s.max);
  if (budget) {
    std::printf(" %6.3f |\n", s.median / kBudgetMs);
  } else {
    std::printf("        |\n");
  }
}

double run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const auto t0 = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  posix_spawn_file_actions_destroy(&actions);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s failed (status %d)\n", argv[0], status);
    std::exit(1);
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 200;
  std::string launcher;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(5, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--launcher") == 0 && i + 1 < argc) {
      launcher = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "probe_plan_bench: unknown argument '%s' (expected --repeat N or --launcher PATH)\n",
          argv[i]);
      return 64;
    }
  }

  const dl::SystemHost host;
  std::vector<double> total, cgroup, gpu, plan;
  for (int i = 0; i < repeat; ++i) {
    dl::Facts facts;
    total.push_back(time_ms([&] {
      facts = dl::probe(host);
      dl::make_plan(facts, dl::Request{});
    }));
    cgroup.push_back(time_ms([&] { dl::read_cgroup_limits(host); }));
    gpu.push_back(time_ms([&] { host.gpus(); }));
    plan.push_back(time_ms([&] { dl::make_plan(facts, dl::Request{}); }));
  }

  std::printf("probe + plan on this machine, %d repetitions (ms)\n\n", repeat);
  std::printf("| %-34s | %9s | %9s | %9s | %6s |\n", "what", "median", "p95", "max", "/50 ms");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(11, '-').c_str(),
              std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(8, '-').c_str());
  row("probe + plan (in process)", stats(total), true);
  row("  cgroup limits", stats(cgroup), false);
  row("  NVML query", stats(gpu), false);
  row("  plan (pure function)", stats(plan), false);

  if (!launcher.empty()) {
    // Alternate the two so that drift in the machine's load hits both alike.
    std::vector<double> bare, dry;
    const int runs = std::max(5, repeat / 10);
    for (int i = 0; i < runs; ++i) {
      bare.push_back(run_process({"/bin/true"}));
      dry.push_back(run_process({launcher, "--dry-run", "--workspace", "/tmp", "--", "/bin/true"}));
    }
    row("dl-launch --dry-run (process)", stats(dry), true);
    row("/bin/true (process start alone)", stats(bare), false);
  }
  return 0;
}
