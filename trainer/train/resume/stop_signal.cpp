// Stop signals (stop_signal.h).
#include "train/resume/stop_signal.h"

#include <signal.h>

#include <atomic>
#include <initializer_list>

namespace dl::train {
namespace {

std::atomic<int> g_stop_signal{0};

void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
}

int stop_signal() {
  return g_stop_signal.load();
}

}  // namespace dl::train
