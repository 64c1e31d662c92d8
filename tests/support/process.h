// Running a real process in a test: run a program with a controlled environment and a deadline
// and collect its exit status and output, or start one and talk to it through its stdout.
//
// Plain fork/exec/pipe rather than Boost.Process: the tests need exact control over the child's
// signal mask and dispositions, its environment and the exit status (exit code versus signal),
// and that is simplest to get, and to see, at the POSIX level.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace dl::test {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Variables a scheduler or the user may have set around the test run; they would override the
// plan dl-launch makes, so the launcher tests clear them.
inline const std::vector<std::string> kSchedulerVars = {
    "RANK",        "LOCAL_RANK",  "WORLD_SIZE",      "LOCAL_WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "MKL_NUM_THREADS"};

struct Result {
  int code = -1;  // exit status, or 128+N when the process died of signal N; -1: timed out
  std::string out, err;
  int signal = 0;  // N when the process itself died of signal N (not when it exited 128+N)
};

// Generous: a hang is a failure, but a loaded CI machine must not fail a correct program.
constexpr std::chrono::milliseconds kDefaultTimeout{60'000};

// A started process with stdout and stderr on pipes and stdin on /dev/null.
//
// Its environment is this process's, minus every DL_* and FAKE_NVML_* variable (ctest may itself
// run under dl-launch, whose DL_WORKERS and friends would otherwise leak into the launcher under
// test as settings), minus the schedulers' SLURM_*, PET_* and TORCHELASTIC_* (ctest in an srun
// task or a PyTorchJob pod would make the launcher under test one of its workers), minus
// `unset_env`, plus `extra_env`. Signal mask and the dispositions of the
// stop signals are reset to the defaults, as a shell would start it.
class Process {
 public:
  // argv[0] is looked up in PATH when it has no '/'. Throws std::runtime_error when the process
  // cannot be started (a program that is not found runs and exits 127, as from a shell).
  // `cwd`: the working directory it starts in ("" keeps this process's).
  Process(const std::vector<std::string>& argv, const EnvVars& extra_env = {},
          const std::vector<std::string>& unset_env = {}, const std::string& cwd = {});
  ~Process();  // kills and reaps the process if it is still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Reads stdout until a line equal to `line` arrives. False on end of output or timeout.
  bool wait_for_line(const std::string& line,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds{20'000});

  void send_signal(int sig);

  // Waits for the process to exit, collecting the rest of its output. On timeout the process is
  // killed and the result's code is -1.
  Result wait(std::chrono::milliseconds timeout = kDefaultTimeout);

  // Everything read from stdout so far.
  const std::string& out() const { return out_; }

 private:
  // Reads what is available on the open pipes, waiting at most `timeout_ms` for something.
  // False when there was nothing to read.
  bool pump(int timeout_ms);
  bool reap(bool block);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int pid_fd_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string out_, err_;
  size_t scanned_ = 0;  // stdout before this offset has been searched by wait_for_line
};

// Runs `argv` to its end (see Process for the environment).
Result run(const std::vector<std::string>& argv, const EnvVars& extra_env = {},
           const std::vector<std::string>& unset_env = {}, const std::string& cwd = {});

// Full path of `name` in PATH, or "" when it is not there.
std::string find_program(const std::string& name);

// What a failed assertion shows about a run: its exit code, stdout and stderr.
std::string show(const Result& r);

// argv that runs `argv` with `dir` as its working directory. The shell execs the program, so the
// pid is the program's own and signals reach it directly.
std::vector<std::string> in_directory(const std::string& dir, const std::vector<std::string>& argv);

// Reads the process's stdout until it contains `needle`; false when the output ends or the time
// is up first.
bool wait_for_output(Process& process, const std::string& needle,
                     std::chrono::milliseconds timeout);

}  // namespace dl::test
