// dl-launch doctor's findings, table and JSON from figures the tests choose (doctor_report.h): each
// finding appears when its measurement supports it and not otherwise, with the setting to use.
#include "launcher/doctor_report.h"

#include <gtest/gtest.h>

#include <string>

#include "launcher/doctor.h"

namespace dl {
namespace {

bool has_finding(const DoctorFigures& f, const std::string& part) {
  for (const std::string& line : doctor_findings(f)) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

// A plain machine whose figures raise nothing: 8 cores all usable, ample /dev/shm, no GPU; the
// plan's program a script after -- (its DataLoader, its own decoder).
DoctorFigures healthy() {
  DoctorFigures f;
  f.needs.own_command = true;
  f.facts.cpu.online = 8;
  f.facts.cpu.usable = 8;
  f.facts.shm.present = true;
  f.facts.shm.total = f.facts.shm.free = 8ull << 30;
  f.needs.workers = 6;
  f.needs.batch = 128;
  f.needs.sample_bytes = 3 * 224 * 224 * 4;
  f.memory.one_core_gb_s = doctor_reference().memory_one_core_gb_s;
  f.memory.all_cores_gb_s = doctor_reference().memory_all_cores_gb_s;
  f.memory.threads = 8;
  f.trainer = parse_json(
      R"({"decode":{"source":"the data's JPEGs","files":16,"megapixels":0.5,"output_side":224,)"
      R"("full_ms":5,"scaled_ms":4,"full_per_core":200,"scaled_per_core":250},)"
      R"("read":{"files":100,"bytes":10000000,"first_mb_s":900,"second_mb_s":3000,)"
      R"("from_storage":0.02},"copy":{"note":"no CUDA device"}})");
  f.exchange_note = "one local rank: nothing to exchange (--full measures two)";
  return f;
}

TEST(DoctorReport, AHealthyMachineHasNoFinding) {
  const DoctorFigures f = healthy();
  EXPECT_TRUE(doctor_findings(f).empty()) << doctor_findings(f).front();
  EXPECT_NE(render_doctor_text(f).find("findings: none"), std::string::npos);
}

TEST(DoctorReport, ASmallShmNamesTheNeedAndTheSizeToPass) {
  DoctorFigures f = healthy();
  f.facts.shm.total = f.facts.shm.free = 64ull << 20;  // Docker's default
  // 6 workers x 2 batches in flight x 128 x 3x224x224 float32 = 882 MiB.
  EXPECT_EQ(dataloader_shm_need(f.needs), 6ull * 2 * 128 * 602112);
  ASSERT_TRUE(has_finding(f, "/dev/shm is 64.0 MiB")) << render_doctor_text(f);
  EXPECT_TRUE(has_finding(f, "6 DataLoader workers at batch 128 need about 882.0 MiB"));
  EXPECT_TRUE(has_finding(f, "--shm-size=2g"));
  // Two ranks' workers need twice as much: 4g.
  f.needs.local_ranks = 2;
  EXPECT_TRUE(has_finding(f, "--shm-size=4g")) << render_doctor_text(f);
  // No workers: no DataLoader needs it.
  f.needs.workers = 0;
  EXPECT_FALSE(has_finding(f, "/dev/shm"));
  // dl-train's loader runs in threads: it needs none, whatever its workers.
  f.needs.workers = 6;
  f.needs.own_command = false;
  EXPECT_EQ(dataloader_shm_need(f.needs), 0u);
  EXPECT_FALSE(has_finding(f, "/dev/shm"));
  EXPECT_NE(render_doctor_text(f).find("dl-train's loader uses threads: none needed"),
            std::string::npos);
  f.facts.shm = ShmFacts{};
  EXPECT_FALSE(has_finding(f, "/dev/shm"));
}

TEST(DoctorReport, AMissingShmIsAFinding) {
  DoctorFigures f = healthy();
  f.facts.shm = ShmFacts{};
  EXPECT_TRUE(has_finding(f, "/dev/shm is missing"));
}

TEST(DoctorReport, CoresHeldBackAreAFindingWithTheFixForWhatHoldsThem) {
  DoctorFigures f = healthy();
  f.facts.cpu.usable = 2;
  f.facts.cpu.quota = 2.0;
  f.facts.cpu.usable_reason = "cgroup quota 2.00 CPUs (cpu.max); 8 online";
  EXPECT_TRUE(has_finding(f, "only 2 of the machine's 8 cores are usable here (cgroup quota"));
  EXPECT_TRUE(has_finding(f, "raise the CPU quota (docker run --cpus"));
  // An affinity mask is not a quota: --cpus would not change it.
  f.facts.cpu.quota.reset();
  f.facts.cpu.affinity = 2;
  f.facts.cpu.usable_reason = "2 in the affinity mask of 8 online";
  EXPECT_TRUE(has_finding(f, "widen the affinity mask (docker run --cpuset-cpus, taskset -c"));
  EXPECT_FALSE(has_finding(f, "--cpus,"));
  // A quota above the mask does not bind: the mask is what holds them.
  f.facts.cpu.quota = 4.0;
  EXPECT_TRUE(has_finding(f, "widen the affinity mask"));
}

TEST(DoctorReport, ScaledDecodingIsPrescribedOnlyWhereItIsMuchFaster) {
  DoctorFigures f = healthy();  // 250 against 200: not worth a line
  EXPECT_FALSE(has_finding(f, "crop's scale"));
  f.trainer = parse_json(
      R"({"decode":{"source":"the data's JPEGs","files":16,"megapixels":12,"output_side":224,)"
      R"("full_ms":100,"scaled_ms":20,"full_per_core":10,"scaled_per_core":50},)"
      R"("read":{"note":"x"},"copy":{"note":"no CUDA device"}})");
  EXPECT_TRUE(has_finding(f,
                          "at the crop's scale is 5x faster than at full size (400 against 80 "
                          "images/s on 8 cores)"))
      << render_doctor_text(f);
  // dl-train decodes at the crop's scale already: nothing to gain for its plan.
  f.needs.own_command = false;
  EXPECT_FALSE(has_finding(f, "crop's scale"));
}

TEST(DoctorReport, FilesThatCannotBeReadAreAFindingThatNamesTheFirst) {
  DoctorFigures f = healthy();
  f.trainer = parse_json(
      R"({"decode":{"note":"x"},"read":{"unreadable":20,"tried":200,)"
      R"j("unreadable_example":"/d/bag/1.jpg: unreadable (Permission denied)",)j"
      R"("files":180,"bytes":10000000,"first_mb_s":900,"second_mb_s":3000,"from_storage":0},)"
      R"("copy":{"note":"no CUDA device"}})");
  EXPECT_TRUE(has_finding(f,
                          "20 of 200 files read could not be: a run skips them and stops when "
                          "more than max-bad-fraction (default 0.01) of an epoch's samples are "
                          "bad; first: /d/bag/1.jpg: unreadable (Permission denied)"))
      << render_doctor_text(f);
}

TEST(DoctorReport, SlowStorageAgainstTheDecodersIsAFinding) {
  DoctorFigures f = healthy();
  // 100 files of 0.1 MB, decoded at 250/s on each of 8 cores: 200 MB/s wanted.
  f.trainer = parse_json(
      R"({"decode":{"source":"the data's JPEGs","files":16,"megapixels":0.5,"output_side":224,)"
      R"("full_ms":5,"scaled_ms":4,"full_per_core":200,"scaled_per_core":250},)"
      R"("read":{"files":100,"bytes":10000000,"first_mb_s":40,"second_mb_s":3000,)"
      R"("from_storage":0.97},"copy":{"note":"no CUDA device"}})");
  EXPECT_TRUE(has_finding(f,
                          "first read from storage, 40 MB/s, is slower than 8 cores decode it "
                          "(200 MB/s)"))
      << render_doctor_text(f);
  // The same rate from the page cache says nothing of storage.
  f.trainer = parse_json(
      R"({"decode":{"source":"the data's JPEGs","files":16,"megapixels":0.5,"output_side":224,)"
      R"("full_ms":5,"scaled_ms":4,"full_per_core":200,"scaled_per_core":250},)"
      R"("read":{"files":100,"bytes":10000000,"first_mb_s":40,"second_mb_s":3000,)"
      R"("from_storage":0.0},"copy":{"note":"no CUDA device"}})");
  EXPECT_FALSE(has_finding(f, "from storage"));
  EXPECT_NE(render_doctor_text(f).find("a cold rate cannot be told"), std::string::npos);
}

TEST(DoctorReport, PcieLinksAgainstTheirPhysicalLimit) {
  EXPECT_NEAR(pcie_gb_s(3, 16), 15.75, 0.01);
  EXPECT_NEAR(pcie_gb_s(4, 16), 31.5, 0.01);
  EXPECT_NEAR(pcie_gb_s(2, 8), 4.0, 0.01);
  EXPECT_EQ(pcie_gb_s(0, 16), 0);
  DoctorFigures f = healthy();
  GpuInfo g;
  g.name = "NVIDIA H100";
  g.pcie_gen = 4;
  g.max_pcie_gen = 5;  // an idle link runs slower: no finding
  g.pcie_width = g.max_pcie_width = 16;
  f.facts.gpu.available = true;
  f.facts.gpu.gpus.push_back(g);
  EXPECT_FALSE(has_finding(f, "PCIe")) << render_doctor_text(f);
  f.facts.gpu.gpus[0].pcie_width = 8;
  EXPECT_TRUE(has_finding(f, "cuda:0's PCIe link runs x8 of its x16"));
}

TEST(DoctorReport, PinnedCopiesArePrescribedWhereFaster) {
  DoctorFigures f = healthy();
  f.trainer = parse_json(
      R"({"decode":{"note":"x"},"read":{"note":"x"},)"
      R"("copy":{"device":"cuda:0","bytes":268435456,"pageable_gb_s":6,"pinned_gb_s":24}})");
  EXPECT_TRUE(has_finding(f, "pinned memory copies to cuda:0 4x faster than pageable"));
  f.trainer = parse_json(
      R"({"decode":{"note":"x"},"read":{"note":"x"},)"
      R"("copy":{"device":"cuda:0","bytes":268435456,"pageable_gb_s":22,"pinned_gb_s":24}})");
  EXPECT_FALSE(has_finding(f, "pinned"));
}

TEST(DoctorReport, WhatDidNotRunIsSaid) {
  DoctorFigures f = healthy();
  f.trainer.reset();
  f.trainer_error = "dl-train was not found next to dl-launch";
  EXPECT_TRUE(has_finding(f, "dl-train's measurements are missing: dl-train was not found"));
  EXPECT_NE(render_doctor_text(f).find("not measured: dl-train was not found"), std::string::npos);
  f = healthy();
  f.trainer = parse_json(R"({"decode":{"note":"x"},"data_error":"--data: /x is missing"})");
  EXPECT_TRUE(has_finding(f, "the data did not open: --data: /x is missing"));
}

TEST(DoctorReport, TheJsonHoldsEveryFigureAndTheFindings) {
  DoctorFigures f = healthy();
  f.facts.shm.total = f.facts.shm.free = 64ull << 20;
  const auto json = parse_json(render_doctor_json(f));
  ASSERT_TRUE(json);
  EXPECT_EQ(json->find("decode")->get_double("scaled_per_core", 0), 250);
  EXPECT_EQ(json->find("read")->get_double("from_storage", -1), 0.02);
  EXPECT_EQ(json->find("copy")->get_string("note", ""), "no CUDA device");
  EXPECT_EQ(json->find("shm")->get_u64("dataloader_need_bytes", 0), 6ull * 2 * 128 * 602112);
  EXPECT_EQ(json->find("memory")->get_i64("copy_threads", 0), 8);
  EXPECT_EQ(json->find("findings")->items().size(), 1u);
  EXPECT_NE(json->find("reference")->get_double("copy_one_core_gb_s", 0), 0);
}

TEST(DoctorArgs, FullIsTheDoctorsOwnBeforeTheCommand) {
  const char* argv[] = {"dl-launch", "doctor",  "--full",   "--workers", "2",
                        "--",        "python3", "train.py", "--full"};
  bool full = false;
  const auto args = doctor_launcher_args(9, argv, &full);
  EXPECT_TRUE(full);
  EXPECT_EQ(args, (std::vector<std::string>{"dl-launch", "--workers", "2", "--", "python3",
                                            "train.py", "--full"}));
  const char* plain[] = {"dl-launch", "doctor", "--json"};
  EXPECT_EQ(doctor_launcher_args(3, plain, &full),
            (std::vector<std::string>{"dl-launch", "--json"}));
  EXPECT_FALSE(full);
}

}  // namespace
}  // namespace dl
