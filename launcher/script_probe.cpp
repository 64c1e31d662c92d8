// Starting a user's program in probe mode and reading its answer. The answer comes through a
// file of the launcher's choosing, read with the owner's credentials and without following links:
// the program's own output (progress bars, prints, JSON of its own) goes to a log file and can
// never be taken for it. The handshake line is watched while the program runs, so that a program
// that does not speak the protocol is stopped within seconds instead of training for real.
#include "launcher/script_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/act_as.h"
#include "core/dir_fd.h"
#include "core/json.h"
#include "core/text.h"
#include "launcher/captured_run.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

using Clock = std::chrono::steady_clock;

// A result file holds two lines; anything much larger is not the protocol's.
constexpr std::size_t kMaxResultBytes = 1 << 20;

// The file's text, read as the workspace's owner without following a link; "" when absent.
std::string read_result(const std::string& path, const std::optional<Identity>& identity) {
  const ActAs owner(identity);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  std::string text;
  char buf[65536];
  while (text.size() < kMaxResultBytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void remove_as_owner(const std::string& path, const std::optional<Identity>& identity) {
  const ActAs owner(identity);
  ::unlink(path.c_str());
}

// What one probe left: how the program ended, what its result file said, where its log is.
struct RawProbe {
  CapturedRun run;
  ProbeRecords records;
  std::string log_path;
  std::string what;  // "loader probe (4 workers)"
};

RawProbe run_probe(const ScriptProbeSetup& s, const std::string& kind, const std::string& name,
                   const std::string& what,
                   const std::vector<std::pair<std::string, std::string>>& extra) {
  RawProbe p;
  p.what = what;
  const std::string result = s.probe_dir + "/" + name + ".jsonl";
  p.log_path = s.probe_dir + "/" + s.log_prefix + name + ".log";
  remove_as_owner(result, s.identity);  // an earlier start's answer is not this one's

  CapturedRun::Env env = s.env;
  env.emplace_back("DL_PROBE", kind);
  env.emplace_back("DL_PROBE_RESULT", result);
  env.emplace_back("DL_PROBE_PROTOCOL", std::to_string(kProbeProtocol));
  // A program that saves on its way out (a `finally`) saves here, not into a run.
  env.emplace_back("DL_RUN_DIR", s.probe_dir + "/run");
  env.insert(env.end(), extra.begin(), extra.end());

  const auto start = Clock::now();
  bool hello = false;
  const auto no_handshake = [&] {
    if (hello) return false;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    hello = parse_probe_records(read_result(result, s.identity)).hello;
    return !hello && waited > s.handshake_seconds;
  };
  p.run = run_captured(s.command, s.workspace, env, s.timeout_seconds, s.identity, no_handshake);
  p.records = parse_probe_records(read_result(result, s.identity));

  std::string log = "$";
  for (const auto& a : s.command) log += " " + a;
  log += "\n# " + what + "\n" + p.run.out;
  if (!p.run.err.empty()) log += "\n# stderr\n" + p.run.err;
  const ActAs owner(s.identity);
  DirFd::open(s.probe_dir).write_file(s.log_prefix + name + ".log", log);
  return p;
}

// How the program ended, for the failure line.
std::string ending(const CapturedRun& r, double timeout_seconds) {
  if (!r.start_error.empty()) return "could not start: " + r.start_error;
  if (r.timed_out) return "stopped after " + format_number(timeout_seconds) + " s";
  if (r.signal != 0) return "killed by signal " + std::to_string(r.signal);
  return "exit status " + std::to_string(r.code);
}

// The one line of a failed probe ("" when it answered), and the outcome's other fields.
std::optional<JsonValue> settle(const RawProbe& p, const ScriptProbeSetup& s,
                                ScriptProbeOutcome* outcome) {
  *outcome = ScriptProbeOutcome{};
  outcome->handshake = p.records.hello;
  outcome->log_path = p.log_path;
  outcome->torch = p.records.torch;
  outcome->signal = p.run.timed_out || p.run.stopped ? 0 : p.run.signal;
  const std::string where = "; log " + p.log_path;
  if (!p.records.hello) {
    // No handshake: the caller falls back to the rule of thumb, saying why. A program that
    // failed before it (rather than running on, or ending well, without one) failed on its own
    // error or its environment's: its own last line says which.
    outcome->failed_early = !p.run.stopped && (p.run.code != 0 || !p.run.start_error.empty());
    if (p.run.stopped) {
      outcome->failure =
          p.what + ": no handshake within " + format_number(s.handshake_seconds) + " s" + where;
    } else if (outcome->failed_early) {
      const std::string said = last_error_line(p.run.err, p.run.out);
      outcome->failure = p.what + ": it failed before its handshake (" +
                         ending(p.run, s.timeout_seconds) + (said.empty() ? "" : ": " + said) +
                         ")" + where;
    } else {
      outcome->failure = p.what + ": it ended without a handshake (" +
                         ending(p.run, s.timeout_seconds) + ")" + where;
    }
    return std::nullopt;
  }
  std::optional<JsonValue> json;
  if (p.records.result) json = parse_json(*p.records.result);
  const std::string reported = json ? json->get_string("error", "") : "";
  if (!json) {
    outcome->failure = p.what + ": " + ending(p.run, s.timeout_seconds) + " without a result" +
                       (p.records.malformed > 0 ? " (" + std::to_string(p.records.malformed) +
                                                      " line(s) of its result file are not the "
                                                      "protocol's)"
                                                : "") +
                       where;
  } else if (p.run.timed_out || (p.run.code != 0 && reported.empty())) {
    outcome->failure = p.what + ": " + ending(p.run, s.timeout_seconds) + where;
  }
  return json;
}

// A probe that answered with an error: the probe, how the program ended, what it reported.
std::string reported_failure(const RawProbe& p, const ScriptProbeSetup& s,
                             const std::string& what) {
  // A program that failed with a word of its own (argparse's usage error, a message before
  // exit(1)) that the module could not see: that word too.
  std::string said;
  if (p.run.code != 0) {
    const std::string last = last_error_line(p.run.err, p.run.out);
    if (!last.empty() && what.find(last) == std::string::npos) said = " (it said: " + last + ")";
  }
  return p.what + ": " + ending(p.run, s.timeout_seconds) + ", " + what + said + "; log " +
         p.log_path;
}

}  // namespace

ProbeRecords parse_probe_records(const std::string& text) {
  ProbeRecords r;
  for (const std::string& raw : split(text, '\n')) {
    const std::string line = trim(raw);
    if (line.empty()) continue;
    const auto json = parse_json(line);
    if (!json || !json->is_object() || json->get_i64("dl_probe", 0) != kProbeProtocol) {
      ++r.malformed;
      continue;
    }
    const std::string event = json->get_string("event", "");
    if (const std::string torch = json->get_string("torch", ""); !torch.empty()) r.torch = torch;
    if (event == "hello") {
      r.hello = true;
    } else if (event == "result") {
      r.result = line;
    } else {
      ++r.malformed;
    }
  }
  return r;
}

std::string last_error_line(const std::string& err, const std::string& out) {
  for (const std::string* text : {&err, &out}) {
    const std::vector<std::string> lines = split(*text, '\n');
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      const std::string line = trim(*it);
      if (!line.empty()) return line.size() > 300 ? line.substr(0, 297) + "..." : line;
    }
  }
  return "";
}

void prune_probe_logs(const std::string& probe_dir, const std::optional<Identity>& identity,
                      std::size_t keep) {
  const ActAs owner(identity);
  const DirFd dir = DirFd::open(probe_dir);
  const int fd = ::dup(dir.fd());
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  std::vector<std::string> logs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (ends_with(name, ".log") && !name.empty() && is_digit(name[0])) logs.push_back(name);
  }
  // Names start with the start's time (log_prefix), so the order of names is the order of time.
  std::sort(logs.begin(), logs.end());
  for (std::size_t i = 0; i + keep < logs.size(); ++i) {
    ::unlinkat(::dirfd(d), logs[i].c_str(), 0);
  }
  ::closedir(d);
}

WorkerTrial run_loader_probe(const ScriptProbeSetup& setup, int workers,
                             ScriptProbeOutcome* outcome) {
  const std::string count = std::to_string(workers);
  const StopPhase phase("loader probe, " + count + (workers == 1 ? " worker" : " workers"));
  const RawProbe p = run_probe(setup, "loader", "loader-" + count,
                               "loader probe (" + count + " workers)", {{"DL_WORKERS", count}});
  WorkerTrial t;
  t.workers = workers;
  const std::optional<JsonValue> json = settle(p, setup, outcome);
  if (json) {
    t.samples_per_second = json->get_double("samples_per_second", 0.0);
    t.host_bytes = json->get_u64("host_bytes", 0);
    const std::string error = json->get_string("error", "");
    if (!error.empty() && outcome->failure.empty()) {
      outcome->failure = reported_failure(p, setup, error);
    } else if (outcome->failure.empty() && !(t.samples_per_second > 0)) {
      outcome->failure = reported_failure(p, setup, "it measured no samples");
    }
  }
  t.error = outcome->failure;
  return t;
}

ProbeResult run_step_probe(const ScriptProbeSetup& setup, std::int64_t batch,
                           ScriptProbeOutcome* outcome) {
  const std::string size = std::to_string(batch);
  const StopPhase phase("step probe, batch " + size);
  const RawProbe p = run_probe(setup, "step", "step-" + size, "step probe (batch " + size + ")",
                               {{"DL_BATCH_SIZE", size}, {"DL_WORKERS", "0"}});
  ProbeResult r;
  r.batch = batch;
  const std::optional<JsonValue> json = settle(p, setup, outcome);
  if (json) {
    r.out_of_memory = json->get_bool("out_of_memory", false);
    r.peak_bytes = json->get_u64("peak_bytes", 0);
    r.step_seconds = json->get_double("step_seconds", 0.0);
    outcome->samples = std::max<std::int64_t>(0, json->get_i64("samples", 0));
    const std::string error = json->get_string("error", "");
    if (json->get_bool("larger_than_data", false) && outcome->failure.empty()) {
      // Not a failure: this size does not fit the data, as a larger one would not fit memory.
      r.error = "larger than the data set (" + std::to_string(outcome->samples) + " samples)";
      return r;
    }
    if (!error.empty() && outcome->failure.empty()) {
      outcome->failure = reported_failure(p, setup, error);
    } else if (outcome->failure.empty() && !r.out_of_memory && r.peak_bytes == 0) {
      outcome->failure = reported_failure(p, setup, "it reported no peak memory");
    }
  }
  r.error = outcome->failure;
  return r;
}

}  // namespace dl
