// The doctor's measurements, the launcher's own and dl-train's (doctor.h).
#include "launcher/doctor.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <thread>

#include "core/json.h"
#include "core/ports.h"
#include "core/system_host.h"
#include "core/text.h"
#include "launcher/batch_probe.h"
#include "launcher/captured_run.h"
#include "launcher/doctor_report.h"
#include "launcher/stop_request.h"

namespace dl {
namespace {

// dl-train opens the data and decodes a sample; a large folder's scan is bounded as the facts'.
constexpr double kDoctorTimeoutSeconds = 300;

// Why a dl-train run printed no figures, or "" when it did (its line in *line).
std::string trainer_line(const CapturedRun& run, const std::string& what,
                         std::optional<JsonValue>* line) {
  if (!run.start_error.empty()) return "cannot start " + what + ": " + run.start_error;
  if (run.timed_out) return what + " stopped after " + format_number(kDoctorTimeoutSeconds) + " s";
  if (run.signal != 0) return what + " was killed by signal " + std::to_string(run.signal);
  if (run.code != 0) {
    const std::string message = trainer_error_line(run.err);
    return what + " ended with exit code " + std::to_string(run.code) +
           (message.empty() ? "" : ": " + message);
  }
  *line = last_json_object_line(run.out);
  return *line ? "" : what + " printed no figures";
}

void measure_with_trainer(const Launch& launch, const DoctorRequest& r, DoctorFigures& f) {
  std::vector<std::string> argv = {r.trainer[0], r.full ? "--doctor=full" : "--doctor=short"};
  const StopPhase phase("dl-train --doctor");
  const CapturedRun run =
      run_captured(argv, launch.workspace, r.env, kDoctorTimeoutSeconds, launch.run_as);
  f.trainer_error = trainer_line(run, r.trainer[0] + " --doctor", &f.trainer);
}

// The allreduce between `ranks` local processes of dl-train --doctor-exchange, rank 0's line.
void measure_exchange(const Launch& launch, const DoctorRequest& r, int ranks, DoctorFigures& f) {
  const PortReservation port = PortReservation::take();
  std::vector<CapturedRun> runs(static_cast<std::size_t>(ranks));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  const StopPhase phase("dl-train --doctor-exchange");
  for (int rank = 0; rank < ranks; ++rank) {
    EnvList env = r.env;
    for (const auto& [name, value] : EnvList{{"RANK", std::to_string(rank)},
                                             {"LOCAL_RANK", std::to_string(rank)},
                                             {"WORLD_SIZE", std::to_string(ranks)},
                                             {"LOCAL_WORLD_SIZE", std::to_string(ranks)},
                                             {"GROUP_RANK", "0"},
                                             {"MASTER_ADDR", "127.0.0.1"},
                                             {"MASTER_PORT", std::to_string(port.port())}}) {
      env.emplace_back(name, value);
    }
    std::vector<std::string> argv = {r.trainer[0], "--doctor-exchange",
                                     r.full ? "--doctor=full" : "--doctor=short"};
    threads.emplace_back([&, rank, argv, env] {
      try {
        runs[static_cast<std::size_t>(rank)] =
            run_captured(argv, launch.workspace, env, kDoctorTimeoutSeconds, launch.run_as);
      } catch (...) {
        errors[static_cast<std::size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);  // a stop signal
  }
  std::optional<JsonValue> line;
  for (int rank = ranks - 1; rank >= 0; --rank) {
    std::optional<JsonValue> ignored;
    const std::string why =
        trainer_line(runs[static_cast<std::size_t>(rank)],
                     "rank " + std::to_string(rank) + " of " + r.trainer[0] + " --doctor-exchange",
                     rank == 0 ? &line : &ignored);
    if (!why.empty() && (rank != 0 || f.exchange_note.empty())) f.exchange_note = why;
  }
  if (line) f.exchange = line;
}

}  // namespace

std::string doctor_usage() {
  return "Usage: dl-launch doctor [--full] [--json] [options] [-- command [args...]]\n\n"
         "Measures this machine's ceilings once and sets them against what the plan needs:\n"
         "usable cores and RAM, memory copy bandwidth, JPEG decoding per core with this build\n"
         "(full size and at the crop's scale, on the data's own JPEGs where it has them), the\n"
         "data's read rate (first and second read), /dev/shm against a DataLoader's need, the\n"
         "GPUs' clocks and PCIe links (NVML), host-to-device copies and the allreduce between\n"
         "the local ranks. Each figure comes with a reference (the physical limit, or the\n"
         "reference machine's figure), and each finding that matters with what to do.\n"
         "Nothing is started or written.\n\n"
         "  --full     measure longer and more (1 GiB of data, 64 JPEGs, two ranks' allreduce\n"
         "             on a one-rank plan); the default takes seconds\n"
         "  --json     print the figures as one JSON document instead of the table\n\n"
         "The options are dl-launch's (--workspace, --data, --workers, --batch-size,\n"
         "--nproc-per-node, ...): the plan they make is the one measured against.\n";
}

std::vector<std::string> doctor_launcher_args(int argc, const char* const argv[], bool* full) {
  std::vector<std::string> args = {argc > 0 ? argv[0] : "dl-launch"};
  *full = false;
  bool command = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") command = true;
    if (!command && a == "--full") {
      *full = true;
      continue;
    }
    args.push_back(a);
  }
  return args;
}

std::string doctor_typo(const std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    if (args[i].rfind("--", 0) != 0) continue;
    const std::string name = args[i].substr(2, args[i].find('=') - 2);
    if (name != "full" && nearest_word(name, {"full"}) == "full") {
      return "unrecognised option '--" + name +
             "': did you mean --full? (see dl-launch doctor --help)";
    }
  }
  return {};
}

int run_doctor(const Launch& launch, const DoctorRequest& r) {
  DoctorFigures f;
  f.full = r.full;
  f.facts = launch.facts;
  const Plan& plan = launch.plan;
  f.needs.device = plan.device.value;
  f.needs.local_ranks = static_cast<int>(plan.ranks.size());
  f.needs.workers = plan.workers.value;
  f.needs.workers_reason = plan.workers.reason;
  f.needs.batch = plan.batch_size.value;
  f.needs.batch_reason = plan.batch_size.reason;
  f.needs.sample_bytes = launch.request.sample_bytes.value;
  f.needs.own_command = !launch.request.default_program;

  if (!r.json) std::cerr << "dl-launch doctor: measuring memory copies ...\n";
  f.memory =
      measure_memory_bandwidth(f.facts.cpu.usable, (r.full ? 256ull : 64ull) << 20, r.full ? 5 : 3);
  if (r.trainer.empty()) {
    f.trainer_error = r.missing_trainer;
    f.exchange_note = "not measured: " + r.missing_trainer;
  } else {
    if (!r.json) std::cerr << "dl-launch doctor: decoding, reading the data, copying ...\n";
    measure_with_trainer(launch, r, f);
    // --full measures two ranks on a one-rank plan, where there is a device for each: NCCL
    // refuses two ranks on one GPU.
    const bool on_gpu = f.needs.device.rfind("cuda", 0) == 0;
    const bool two_fit = !on_gpu || f.facts.gpu.gpus.size() >= 2;
    const int ranks = f.needs.local_ranks > 1 ? f.needs.local_ranks : (r.full && two_fit ? 2 : 1);
    if (ranks > 1) {
      if (!r.json)
        std::cerr << "dl-launch doctor: an allreduce between " << ranks << " ranks ...\n";
      measure_exchange(launch, r, ranks, f);
    } else {
      f.exchange_note = two_fit ? "one local rank: nothing to exchange (--full measures two)"
                                : "one local rank: nothing to exchange (one GPU)";
    }
  }
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
  std::cout << (r.json ? render_doctor_json(f) : render_doctor_text(f)) << std::flush;
  // Data a run could not open ends the doctor as it would end the run, after the figures.
  const int data_exit = f.trainer ? static_cast<int>(f.trainer->get_i64("data_exit", 0)) : 0;
  return data_exit;
}

}  // namespace dl
