// A stop asked for with SIGINT, SIGTERM or SIGHUP before the program runs: while dl-launch probes
// the user's program, searches the batch size, asks dl-train about the data or starts the ranks.
// The handler only records the signal; whatever waits (the probes' loop, the supervisors before
// they start anything) looks at it, kills and reaps what it started, and throws StopRequested,
// which unwinds past every write to the caches and the run directory. Once the program runs, the
// supervisors take the signals themselves and forward them (supervisor.h).
#pragma once

#include <exception>
#include <string>

namespace dl {

// Installs the handler for SIGINT, SIGTERM and SIGHUP, also where dl-launch inherited them
// ignored (a background job of a non-interactive shell ignores SIGINT): a stop is a stop.
void install_stop_handlers();

// The first stop signal received since install_stop_handlers, 0 when none.
int stop_signal();
inline bool stop_requested() {
  return stop_signal() != 0;
}

// What dl-launch is doing, for the stop line, for the guard's life. Phases nest: "searching the
// batch size" around "step probe, batch 64" reads "searching the batch size (step probe, batch
// 64)"; a phase already on the stack is not repeated.
class StopPhase {
 public:
  explicit StopPhase(const std::string& what);
  ~StopPhase();
  StopPhase(const StopPhase&) = delete;
  StopPhase& operator=(const StopPhase&) = delete;

 private:
  bool pushed_ = false;
};

// The phases on the stack, outermost first, as the stop line names them ("" when none).
std::string current_phase();

// Thrown where a stop was requested before the program started; the top level reports it in one
// line (what()) and exits 128 + the signal.
class StopRequested : public std::exception {
 public:
  StopRequested(int signal, const std::string& phase);
  int signal() const { return signal_; }
  int exit_code() const { return 128 + signal_; }
  // "stopped by SIGINT while searching the batch size (step probe, batch 64); nothing was
  // started or saved"
  const char* what() const noexcept override { return line_.c_str(); }

 private:
  int signal_;
  std::string line_;
};

// Throws StopRequested for the signal received and the current phase, when there was one.
void throw_if_stop_requested();

}  // namespace dl
