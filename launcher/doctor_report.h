// What `dl-launch doctor` measured, against what the plan needs and a stated reference for each
// figure (the physical limit where one exists, else the reference machine's figure from
// bench/RESULTS.md), and the findings that follow: pure functions from the figures to the table,
// the JSON and the lines that matter, so that every finding is tested on figures a test chooses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/probe.h"
#include "launcher/memory_bandwidth.h"

namespace dl {

// What the plan asks of the machine.
struct DoctorNeeds {
  std::string device = "cpu";
  int local_ranks = 1;
  int workers = 0;  // loader workers per rank
  std::int64_t batch = 64;
  std::uint64_t sample_bytes = 0;  // one float32 input
  std::string workers_reason, batch_reason;
  // A program after -- (a Python script: its DataLoader's workers, its own decoder) rather than
  // dl-train (threads, decoding at the crop's scale).
  bool own_command = false;
};

struct DoctorFigures {
  bool full = false;
  double seconds = 0;  // the doctor's own wall time
  Facts facts;
  DoctorNeeds needs;
  MemoryBandwidth memory;
  // dl-train --doctor's line: {"decode":{...},"read":{...},"copy":{...},...}; unset with
  // `trainer_error` saying why.
  std::optional<JsonValue> trainer;
  std::string trainer_error;
  // dl-train --doctor-exchange's rank 0 line; unset with `exchange_note` saying why.
  std::optional<JsonValue> exchange;
  std::string exchange_note;
};

// The reference machine's figures (bench/RESULTS.md, "dl-launch doctor"): what the table's last
// column compares with where no physical limit applies.
struct DoctorReference {
  std::string machine;
  double memory_one_core_gb_s = 0, memory_all_cores_gb_s = 0;
  double jpeg_full_per_core = 0, jpeg_scaled_per_core = 0;  // the synthetic photo, per second
  double gloo_two_ranks_busbw_gb_s = 0;  // the allreduce of --full on a one-rank CPU plan
};
const DoctorReference& doctor_reference();

// A PCIe link's bandwidth per direction after encoding (gen 1-2: 8b/10b, 3 on: 128b/130b), in
// GB/s; 0 for an unknown generation.
double pcie_gb_s(unsigned gen, unsigned width);

// /dev/shm a PyTorch DataLoader fills with the plan: the ranks' workers each holding
// kPrefetchPerWorker batches; 0 for dl-train, whose loader runs in threads.
std::uint64_t dataloader_shm_need(const DoctorNeeds& needs);

// The findings that matter, one line each, with the command or setting that helps.
std::vector<std::string> doctor_findings(const DoctorFigures& f);

// The terminal's table (figure, measured, reference) and the findings.
std::string render_doctor_text(const DoctorFigures& f);
// The same as one JSON document.
std::string render_doctor_json(const DoctorFigures& f);

}  // namespace dl
