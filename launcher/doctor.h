// `dl-launch doctor [--full] [options] [-- command]`: the machine's ceilings measured once and set
// against what the plan needs (doctor_report.h). The launcher measures what needs no LibTorch
// (cores, RAM, /dev/shm, memory bandwidth, the GPUs' clocks and links through NVML); dl-train, as
// the workspace's owner in the workspace with the environment training gets, measures JPEG
// decoding, the data's read rate and host-to-device copies (`dl-train --doctor`), and its ranks the
// allreduce between the local ranks (`dl-train --doctor-exchange`). Nothing is started or written.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/launch.h"

namespace dl {

struct DoctorRequest {
  bool full = false;  // longer measurements; the allreduce of two ranks on a one-rank plan
  bool json = false;  // the JSON document instead of the table
  // dl-train's argv (argv[0] absolute); empty where it is missing (its figures are then said to
  // be missing).
  std::vector<std::string> trainer;
  std::string missing_trainer;  // why it is empty
  EnvList env;                  // what a probe gets: the plan's DL_* for one process
  std::string nvml_library;
  // When `dl-launch doctor` started: the header's time includes the probe and the plan.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// Measures, prints the table (or the JSON) on stdout and returns 0, or, where dl-train could not
// open the data, the exit code a run would have ended with (its line is a finding).
int run_doctor(const Launch& launch, const DoctorRequest& request);

// The one-line refusal of a misspelt doctor option before `--` ("--ful": did you mean --full?),
// or "" when none is one: the launcher's parser knows only its own options.
std::string doctor_typo(const std::vector<std::string>& args);

// `dl-launch doctor --help`.
std::string doctor_usage();

// `doctor` and its own options (--full) out of argv, before the launcher's parser sees the rest;
// sets *full. Exposed for tests.
std::vector<std::string> doctor_launcher_args(int argc, const char* const argv[], bool* full);

}  // namespace dl
