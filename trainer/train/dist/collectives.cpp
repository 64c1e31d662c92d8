// The c10d side of a distributed run (collectives.h). ProcessGroupGloo and ProcessGroupNCCL derive
// from c10d::ProcessGroup in LibTorch 1.13 and from c10d::Backend in 2.x; both spell the
// collectives alike, so one alias covers the two lines.
#include "train/dist/collectives.h"

#include <c10/util/Logging.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "core/errors.h"
#include "core/text.h"

#if defined(USE_C10D_GLOO) && __has_include(<gloo/config.h>)
#define DL_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(USE_C10D_NCCL)
#define DL_HAVE_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace dl::train {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

using std::chrono::milliseconds;

milliseconds to_ms(double seconds) {
  return milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

int read_int(const EnvRead& read, const char* name, int fallback, std::int64_t min,
             std::int64_t max) {
  const auto text = read(name);
  if (!text) return fallback;
  const auto v = parse_i64(*text);
  if (!v || *v < min || *v > max) {
    throw UserError(exit_code::kUsage, fmt::format("{}={}: expected a whole number from {} to {}",
                                                   name, *text, min, max));
  }
  return static_cast<int>(*v);
}

class C10dCollectives final : public Collectives {
 public:
  C10dCollectives(c10::intrusive_ptr<Group> group, c10::intrusive_ptr<c10d::Store> store,
                  std::string backend, const DistContract& contract)
      : group_(std::move(group)),
        store_(std::move(store)),
        backend_(std::move(backend)),
        rank_(contract.rank),
        size_(contract.world_size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return backend_; }

  std::function<void()> start_sum(at::Tensor t) override {
    std::vector<at::Tensor> tensors{std::move(t)};
    auto work = guarded("all-reduce", [&] { return group_->allreduce(tensors); });
    return [this, work, tensors] { wait(work, "all-reduce"); };
  }

  void max(const at::Tensor& t) override {
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    wait(guarded("all-reduce", [&] { return group_->allreduce(tensors, options); }), "all-reduce");
  }

  void broadcast(const at::Tensor& t, int root) override {
    std::vector<at::Tensor> tensors{t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    wait(guarded("broadcast", [&] { return group_->broadcast(tensors, options); }), "broadcast");
  }

 private:
  // A collective that cannot complete means another rank died or stalled past --dist-timeout:
  // one line, exit 75 (dl-launch names the rank that failed first).
  [[noreturn]] void fail(const char* what, const std::exception& e) const {
    throw UserError(exit_code::kRendezvous,
                    fmt::format("rank {}: {} over {} ranks ({}) failed: {}", rank_, what, size_,
                                backend_, first_line(e.what())));
  }

  template <typename Start>
  c10::intrusive_ptr<c10d::Work> guarded(const char* what, Start start) const {
    try {
      return start();
    } catch (const std::exception& e) {
      fail(what, e);
    }
  }

  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) const {
    try {
      work->wait();
    } catch (const std::exception& e) {
      fail(what, e);
    }
  }

  c10::intrusive_ptr<Group> group_;
  c10::intrusive_ptr<c10d::Store> store_;  // kept: rank 0's serves the others while they run
  std::string backend_;
  int rank_;
  int size_;
};

// c10d logs its own view of a failed bind or connect (glog warnings and errors on stderr) before
// it throws; the rendezvous turns the exception into one line naming the fix, so c10's logging
// is muted while it runs (FATAL only), then restored.
class QuietC10Logging {
 public:
  QuietC10Logging() : saved_(level()) { level() = 3; }
  ~QuietC10Logging() { level() = saved_; }
  QuietC10Logging(const QuietC10Logging&) = delete;
  QuietC10Logging& operator=(const QuietC10Logging&) = delete;

 private:
  static int& level() {
#ifdef C10_USE_GLOG
    return FLAGS_minloglevel;  // c10 logs through glog
#else
    return FLAGS_caffe2_log_level;  // c10's own logging
#endif
  }
  int saved_;
};

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// TCPStore's classic backend, which every LibTorch has. From 2.4 the default is the libuv one, and
// a LibTorch built without libuv (Debian's 2.6) refuses it ("use_libuv was requested but PyTorch
// was build without libuv support"). Set where TCPStoreOptions has the field; nothing before.
template <typename Options>
auto use_classic_store(Options& options, int) -> decltype(options.useLibUV = false, void()) {
  options.useLibUV = false;
}
template <typename Options>
void use_classic_store(Options& /*options*/, long) {}

// Rank 0 listens on MASTER_PORT; every rank connects and adds itself to a count. The last to
// arrive releases the others, and a rank still waiting at the timeout says how many came.
c10::intrusive_ptr<c10d::Store> rendezvous(const DistContract& c, double seconds) {
  const std::string where = fmt::format("{}:{}", c.master_addr, c.master_port);
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(c.master_port);
  options.isServer = c.rank == 0;
  options.numWorkers = c.world_size;
  options.waitWorkers = false;
  options.timeout = to_ms(seconds);
  use_classic_store(options, 0);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    const QuietC10Logging quiet;
    store = c10::make_intrusive<c10d::TCPStore>(c.master_addr, options);
  } catch (const std::exception& e) {
    const std::string why = first_line(e.what());
    if (c.rank == 0 && why.find("in use") != std::string::npos) {
      throw UserError(exit_code::kRendezvous,
                      fmt::format("rendezvous: port {} (MASTER_PORT) is already in use on this "
                                  "machine; choose another with --master-port, or stop what "
                                  "listens there",
                                  c.master_port));
    }
    throw UserError(exit_code::kRendezvous,
                    c.rank == 0
                        ? fmt::format("rendezvous: rank 0 cannot listen at {}: {}", where, why)
                        : fmt::format("rendezvous: rank {} could not reach rank 0 at {} "
                                      "(MASTER_ADDR, MASTER_PORT) within {:g} s: {}",
                                      c.rank, where, seconds, why));
  }
  const std::int64_t arrived = store->add("dl/arrived", 1);
  if (arrived == c.world_size) store->set("dl/all-arrived", std::vector<std::uint8_t>{1});
  try {
    store->wait({"dl/all-arrived"}, to_ms(seconds));
  } catch (const std::exception&) {
    const std::int64_t count = store->add("dl/arrived", 0);
    throw UserError(exit_code::kRendezvous,
                    fmt::format("rendezvous at {}: {} of {} ranks arrived within {:g} s "
                                "(--rdzv-timeout); check that every node started and that "
                                "MASTER_ADDR and MASTER_PORT are the same everywhere",
                                where, count, c.world_size, seconds));
  }
  return store;
}

std::string choose_backend(const std::string& asked, c10::Device device) {
  if (asked == "auto") return device.is_cuda() ? "nccl" : "gloo";
  return asked;
}

c10::intrusive_ptr<Group> make_group(const std::string& backend,
                                     const c10::intrusive_ptr<c10d::Store>& store,
                                     const DistContract& c, double collective_seconds) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(backend, store);
  if (backend == "gloo") {
#ifdef DL_HAVE_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(to_ms(collective_seconds));
    // As Python's init_process_group: GLOO_SOCKET_IFNAME names the interface; on one machine
    // loopback; else the interface the host name resolves to.
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (is_loopback(c.master_addr)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, c.rank, c.world_size, options);
#endif
  } else if (backend == "nccl") {
#ifdef DL_HAVE_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = to_ms(collective_seconds);
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, c.rank, c.world_size, options);
#endif
  }
  throw std::logic_error("no " + backend + " process group in this build");
}

}  // namespace

std::vector<std::string> process_group_backends() {
  std::vector<std::string> names;
#ifdef DL_HAVE_GLOO
  names.emplace_back("gloo");
#endif
#ifdef DL_HAVE_NCCL
  names.emplace_back("nccl");
#endif
  return names;
}

DistContract read_contract(const EnvRead& read_env) {
  const EnvRead read = read_env ? read_env : [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
  };
  DistContract c;
  c.world_size = read_int(read, "WORLD_SIZE", 1, 1, 1 << 20);
  c.rank = read_int(read, "RANK", 0, 0, 1 << 20);
  if (c.rank >= c.world_size) {
    throw UserError(exit_code::kUsage, fmt::format("RANK={}: expected a rank below WORLD_SIZE={}",
                                                   c.rank, c.world_size));
  }
  c.local_rank = read_int(read, "LOCAL_RANK", 0, 0, 1 << 20);
  c.local_world_size = read_int(read, "LOCAL_WORLD_SIZE", 1, 1, 1 << 20);
  c.group_rank = read_int(read, "GROUP_RANK", 0, 0, 1 << 20);
  c.master_port = read_int(read, "MASTER_PORT", c.master_port, 1, 65535);
  if (const auto addr = read("MASTER_ADDR")) c.master_addr = *addr;
  return c;
}

std::unique_ptr<Collectives> Collectives::connect(const DistContract& contract,
                                                  const GroupOptions& options, c10::Device device) {
  const std::string backend = choose_backend(options.backend, device);
  const auto available = process_group_backends();
  if (std::find(available.begin(), available.end(), backend) == available.end()) {
    throw UserError(
        exit_code::kUsage,
        fmt::format("--dist-backend {}: this dl-train's LibTorch has no {} process "
                    "group (it has: {})",
                    backend, backend,
                    available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", "))));
  }
  if (backend == "nccl" && !device.is_cuda()) {
    throw UserError(
        exit_code::kUsage,
        "--dist-backend nccl: NCCL reduces CUDA tensors only, and this rank trains on " +
            device.str() + "; use gloo");
  }
  auto store = rendezvous(contract, options.rendezvous_seconds);
  c10::intrusive_ptr<Group> group;
  try {
    group = make_group(backend, store, contract, options.collective_seconds);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError(exit_code::kRendezvous,
                    fmt::format("rank {}: the {} process group could not connect: {}",
                                contract.rank, backend, first_line(e.what())));
  }
  return std::make_unique<C10dCollectives>(std::move(group), std::move(store), backend, contract);
}

}  // namespace dl::train
