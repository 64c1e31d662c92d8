// A held port (core/ports.h): rank 0's store still binds it, nothing else on the machine gets it,
// and a port someone listens on is refused with one line naming it.
#include "core/ports.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/errors.h"

namespace dl::test {
namespace {

// A socket bound to 0.0.0.0:port (SO_REUSEADDR as c10d's TCPStore sets it, when `reuse`); -1
// where bind fails. The caller closes it.
int bind_port(int port, bool reuse) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

TEST(PortReservation, TheStoreBindsTheHeldPortAndListensOnIt) {
  const PortReservation hold = PortReservation::take();
  ASSERT_GT(hold.port(), 0);
  const int store = bind_port(hold.port(), true);
  ASSERT_GE(store, 0) << "TCPStore's bind (SO_REUSEADDR) of held port " << hold.port();
  EXPECT_EQ(listen(store, 8), 0);
  close(store);
}

TEST(PortReservation, NoOtherBindOfPortZeroIsHandedTheHeldPort) {
  const PortReservation hold = PortReservation::take();
  // Without the hold, a port just released is free for the next bind of port 0; with it, a
  // plain bind of the port fails and no autobind returns it.
  EXPECT_EQ(bind_port(hold.port(), false), -1);
  for (int i = 0; i < 2000; ++i) {
    const int fd = bind_port(0, true);
    ASSERT_GE(fd, 0);
    const int got = bound_port(fd);
    close(fd);
    ASSERT_NE(got, hold.port()) << "bind of port 0 number " << i << " got the held port";
  }
}

TEST(PortReservation, TheHoldEndsWithTheObjectAndMovesWithIt) {
  int port = 0;
  {
    PortReservation first = PortReservation::take();
    port = first.port();
    const PortReservation second = std::move(first);
    EXPECT_EQ(second.port(), port);
    EXPECT_EQ(bind_port(port, false), -1) << "the moved-to hold still holds";
  }
  const int fd = bind_port(port, false);
  EXPECT_GE(fd, 0) << "port " << port << " is free again once the hold is gone";
  if (fd >= 0) close(fd);
}

TEST(CheckPortFree, APortSomeoneListensOnIsOneLineNamingIt) {
  const int fd = bind_port(0, true);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(listen(fd, 1), 0);
  const int port = bound_port(fd);
  try {
    check_port_free(port);
    ADD_FAILURE() << "no error for a port in use";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), 75);
    EXPECT_NE(std::string(e.what()).find("master port " + std::to_string(port)), std::string::npos)
        << e.what();
  }
  close(fd);
  const PortReservation hold = PortReservation::take();
  EXPECT_NO_THROW(check_port_free(hold.port())) << "a held port is free for the store";
}

}  // namespace
}  // namespace dl::test
