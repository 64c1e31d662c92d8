// Rank 0's rendezvous port, looked at before anything starts: a free one found for a single node,
// and a given one tried, so that a port in use is one line naming it rather than a rank that
// fails to host its store. c10d's TCPStore listens on every address, so both bind the wildcard.
#pragma once

namespace dl {

// A free port (the kernel's answer to binding port 0), held until this object goes: bound with
// SO_REUSEADDR and never listened on, so that rank 0's TCPStore (which binds with SO_REUSEADDR)
// still gets it, while the kernel hands it to no other bind of port 0 and no outgoing connection.
// Without the hold, another job starting on this node between the pick and rank 0's bind (seconds:
// Python imports torch first) could take the port, and its ranks and ours would meet in one store.
// Throws UserError 75 when no socket can be bound.
class PortReservation {
 public:
  static PortReservation take();
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();
  int port() const { return port_; }

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

// Whether the port can be bound now (with SO_REUSEADDR, as TCPStore binds: connections left in
// TIME_WAIT by an earlier run do not count). Throws UserError 75 naming the port and the fix when
// another process listens on it.
void check_port_free(int port);

}  // namespace dl
