// The figures of `dl-launch doctor` that need dl-train's data layer or LibTorch, measured the way
// training meets them and printed as one JSON line on stdout (the launcher reads its last line
// that is a JSON object, as it reads --data-facts):
//
//   dl-train --doctor[=short|full]   JPEG decoding per core at full size and at the crop's scale
//                                    (the user's own JPEGs where the data has them, else a
//                                    synthetic photo), the data's read rate (first and second
//                                    read, and how much of the first came from storage), and the
//                                    host-to-device copy rate, pageable and pinned, on a GPU
//   dl-train --doctor-exchange       one rank of an allreduce between the ranks torchrun's
//                                    variables describe (Gloo on the CPU, NCCL on GPUs); rank 0
//                                    prints the bandwidth
#pragma once

namespace dl::train {

struct TrainConfig;

// `full` measures more files and more bytes for steadier figures. Returns 0; the data failing to
// open is a figure ("data_error"), not an exit: the machine's figures are still measured.
int run_doctor(const TrainConfig& config, bool full);

// Returns 0, or throws UserError 75 as a distributed run's rendezvous would.
int run_exchange_bench(const TrainConfig& config, bool full);

}  // namespace dl::train
