// One sig_atomic_t written by the handler and read by the waiting loops; the phase stack is the
// main thread's (the launcher runs its probes one at a time, from one thread).
#include "launcher/stop_request.h"

#include <signal.h>

#include <string>
#include <vector>

namespace dl {
namespace {

volatile sig_atomic_t g_signal = 0;

std::vector<std::string>& phases() {
  static std::vector<std::string> stack;
  return stack;
}

void on_stop_signal(int sig) {
  if (g_signal == 0) g_signal = sig;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal " + std::to_string(sig);
  }
}

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Restarted system calls keep the rest of the launcher (its logging, its file writes) as it
  // was; poll() is never restarted, so the probes' loop wakes at once.
  action.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &action, nullptr);
}

int stop_signal() {
  return g_signal;
}

StopPhase::StopPhase(const std::string& what) {
  for (const auto& p : phases()) {
    if (p == what) return;
  }
  phases().push_back(what);
  pushed_ = true;
}

StopPhase::~StopPhase() {
  if (pushed_) phases().pop_back();
}

std::string current_phase() {
  const auto& stack = phases();
  if (stack.empty()) return "";
  std::string text = stack.front();
  for (std::size_t i = 1; i < stack.size(); ++i) {
    text += (i == 1 ? " (" : ", ") + stack[i];
  }
  return stack.size() > 1 ? text + ")" : text;
}

StopRequested::StopRequested(int signal, const std::string& phase)
    : signal_(signal),
      line_("stopped by " + signal_name(signal) + (phase.empty() ? "" : " while " + phase) +
            "; nothing was started or saved") {}

void throw_if_stop_requested() {
  if (const int sig = stop_signal(); sig != 0) throw StopRequested(sig, current_phase());
}

}  // namespace dl
