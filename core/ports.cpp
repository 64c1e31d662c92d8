// Binding an IPv4 socket to find, hold or try a port.
#include "core/ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "core/errors.h"

namespace dl {
namespace {

// Binds 0.0.0.0:port; returns the errno (0: bound) and the port bound. With `keep`, the bound
// socket is handed back there instead of closed.
int try_bind(int port, int* bound, int* keep = nullptr) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  int err = 0;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    err = errno;
  } else if (bound != nullptr) {
    socklen_t len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      *bound = ntohs(addr.sin_port);
    } else {
      err = errno;
    }
  }
  if (keep != nullptr && err == 0) {
    *keep = fd;
  } else {
    close(fd);
  }
  return err;
}

}  // namespace

PortReservation PortReservation::take() {
  int port = 0;
  int fd = -1;
  if (const int err = try_bind(0, &port, &fd); err != 0 || port <= 0) {
    if (fd >= 0) close(fd);
    throw UserError(exit_code::kRendezvous,
                    std::string("cannot find a free port for rank 0's store (binding port 0: ") +
                        std::strerror(err) + "); give one with --master-port");
  }
  return PortReservation(fd, port);
}

PortReservation::PortReservation(PortReservation&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) close(fd_);
}

void check_port_free(int port) {
  const int err = try_bind(port, nullptr);
  if (err == EADDRINUSE) {
    throw UserError(exit_code::kRendezvous,
                    "master port " + std::to_string(port) +
                        " is in use on this node, where rank 0's store must listen: choose "
                        "another with --master-port (the same on every node), or free it (ss "
                        "-ltnp 'sport = :" +
                        std::to_string(port) + "' shows who holds it)");
  }
  // Any other error (no IPv4, a port below 1024 without the right) is left to rank 0 to report.
}

}  // namespace dl
