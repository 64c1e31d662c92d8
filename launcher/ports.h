// Rank 0's rendezvous port, looked at before anything starts: a free one found for a single node,
// and a given one tried, so that a port in use is one line naming it rather than a rank that
// fails to host its store. c10d's TCPStore listens on every address, so both bind the wildcard.
#pragma once

namespace dl {

// A port no one listens on now (the kernel's answer to binding port 0). Throws UserError 75 when
// no socket can be bound.
int free_port();

// Whether the port can be bound now (with SO_REUSEADDR, as TCPStore binds: connections left in
// TIME_WAIT by an earlier run do not count). Throws UserError 75 naming the port and the fix when
// another process listens on it.
void check_port_free(int port);

}  // namespace dl
