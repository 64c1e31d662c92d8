// The stop request of a training run: SIGINT, SIGTERM and SIGHUP set a flag the loop reads
// between steps (docker stop, Ctrl-C, the launcher's forwarding), so that it saves last.pt and
// exits 128+N instead of dying mid-write.
#pragma once

namespace dl::train {

// Installs the handlers (idempotent).
void install_stop_handlers();

// The last stop signal received, 0 when none.
int stop_signal();

}  // namespace dl::train
