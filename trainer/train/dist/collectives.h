// The processes of a distributed run and their collectives, on PyTorch's own engine (c10d): the
// torchrun contract read from the environment, the rendezvous on rank 0's TCPStore, and a Gloo
// (CPU) or NCCL (CUDA) process group. Nothing of the transport is ours; this file turns c10d's
// failures into one line each (exit 75) and keeps c10d's headers out of the rest of the trainer.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dl::train {

// torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
// MASTER_PORT), as dl-launch, torchrun, Slurm through dl-launch or a PyTorchJob set them.
struct DistContract {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int group_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;

  bool distributed() const { return world_size > 1; }
};

using EnvRead = std::function<std::optional<std::string>(const char*)>;

// The contract from the environment (`read`: the process's own when empty). Throws UserError 64
// naming the variable when one is not a number in range, or RANK is not below WORLD_SIZE.
DistContract read_contract(const EnvRead& read = {});

struct GroupOptions {
  std::string backend = "auto";  // auto (nccl on CUDA, gloo on CPU) | gloo | nccl
  double rendezvous_seconds = 300;
  double collective_seconds = 300;
};

// The process groups this build's LibTorch has: "gloo" where its Gloo headers were found at build
// time, "nccl" in a CUDA LibTorch with NCCL.
std::vector<std::string> process_group_backends();

// In-place collectives over every rank. Every rank must call them in the same order.
class Collectives {
 public:
  // Rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 listens) and the process group. Throws UserError
  // 75 naming the address and port: port in use, rank 0 unreachable, or fewer ranks arriving than
  // WORLD_SIZE within the rendezvous timeout (how many did); 64 for a backend this build lacks.
  static std::unique_ptr<Collectives> connect(const DistContract& contract,
                                              const GroupOptions& options, c10::Device device);
  virtual ~Collectives() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  // Starts summing `t` over the ranks, in place; the returned function waits for the sum.
  virtual std::function<void()> start_sum(at::Tensor t) = 0;
  void sum(const at::Tensor& t) { start_sum(t)(); }
  // Element-wise maximum over the ranks, in place, waited for.
  virtual void max(const at::Tensor& t) = 0;
  // Rank `root`'s `t` everywhere, in place, waited for.
  virtual void broadcast(const at::Tensor& t, int root) = 0;
};

}  // namespace dl::train
