// A TCP port for a test's rendezvous: one nothing listens on right now.
#pragma once

namespace dl::test {

// The port the kernel picks for port 0 on 127.0.0.1, released before returning.
int free_port();

}  // namespace dl::test
