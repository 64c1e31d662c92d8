// The doctor's table, JSON and findings from its figures (doctor_report.h).
#include "launcher/doctor_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/text.h"
#include "launcher/plan.h"

namespace dl {
namespace {

// "12.3", "0.052", "1234": `digits` significant digits, whole numbers from 100 on.
std::string rate(double v, int digits = 3) {
  char buf[32];
  if (std::fabs(v) >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  }
  return buf;
}

std::string ratio(double measured, double reference) {
  if (reference <= 0 || measured <= 0) return "";
  return ": " + rate(measured / reference, 2) + "x";
}

const JsonValue* part(const DoctorFigures& f, const char* name) {
  if (!f.trainer) return nullptr;
  const JsonValue* p = f.trainer->find(name);
  return p != nullptr && p->is_object() ? p : nullptr;
}

// A part of dl-train's line that holds figures (not only a "note" saying why there are none).
const JsonValue* measured(const DoctorFigures& f, const char* name, const char* key) {
  const JsonValue* p = part(f, name);
  return p != nullptr && p->find(key) != nullptr ? p : nullptr;
}

std::string note_of(const DoctorFigures& f, const char* name) {
  const JsonValue* p = part(f, name);
  if (p != nullptr) return p->get_string("note", "");
  return f.trainer_error.empty() ? "not measured" : "not measured: " + f.trainer_error;
}

// The smallest power of two GiB at least twice `need`: docker's --shm-size to pass.
std::string shm_size_to_pass(std::uint64_t need) {
  std::uint64_t gib = 1;
  while (gib * (1ull << 30) < 2 * need) gib *= 2;
  return std::to_string(gib) + "g";
}

struct Row {
  std::string figure, value, reference;
};

const char* const kRefMachine = " (reference)";

// Cores, RAM and the memory copies.
void machine_rows(const DoctorFigures& f, std::vector<Row>& r) {
  const DoctorReference& ref = doctor_reference();
  const CpuFacts& cpu = f.facts.cpu;
  r.push_back({"CPU cores usable",
               std::to_string(cpu.usable) + " of " + std::to_string(cpu.online) + " online",
               cpu.usable_reason});
  r.push_back({"RAM usable", format_bytes(f.facts.memory.usable), f.facts.memory.usable_reason});
  r.push_back({"memory copy, 1 core", rate(f.memory.one_core_gb_s) + " GB/s",
               rate(ref.memory_one_core_gb_s) + " GB/s" + kRefMachine +
                   ratio(f.memory.one_core_gb_s, ref.memory_one_core_gb_s)});
  r.push_back({"memory copy, " + std::to_string(f.memory.threads) + " cores",
               rate(f.memory.all_cores_gb_s) + " GB/s",
               rate(ref.memory_all_cores_gb_s) + " GB/s" + kRefMachine +
                   ratio(f.memory.all_cores_gb_s, ref.memory_all_cores_gb_s)});
}

// dl-train's decoding and reading of the data.
void data_rows(const DoctorFigures& f, std::vector<Row>& r) {
  const DoctorReference& ref = doctor_reference();
  if (const JsonValue* d = measured(f, "decode", "full_per_core")) {
    const bool synthetic = starts_with(d->get_string("source", ""), "a synthetic");
    const double full = d->get_double("full_per_core", 0),
                 scaled = d->get_double("scaled_per_core", 0);
    r.push_back({"JPEG files decoded", d->get_string("source", ""),
                 std::to_string(d->get_i64("files", 0)) + " file(s) of " +
                     rate(d->get_double("megapixels", 0), 2) + " MP"});
    r.push_back({"JPEG decode per core, full size", rate(full) + " images/s",
                 synthetic ? rate(ref.jpeg_full_per_core) + "/s" + kRefMachine +
                                 ratio(full, ref.jpeg_full_per_core)
                           : "-"});
    r.push_back(
        {"JPEG decode per core, crop's scale",
         rate(scaled) + " images/s (to " + std::to_string(d->get_i64("output_side", 0)) + " px)",
         synthetic ? rate(ref.jpeg_scaled_per_core) + "/s" + kRefMachine +
                         ratio(scaled, ref.jpeg_scaled_per_core)
                   : "the full-size decode" + ratio(scaled, full)});
  } else {
    r.push_back({"JPEG decode per core", note_of(f, "decode"), "-"});
  }
  if (const JsonValue* d = measured(f, "read", "first_mb_s")) {
    const double storage = d->get_double("from_storage", -1);
    std::string first = rate(d->get_double("first_mb_s", 0)) + " MB/s over " +
                        format_bytes(d->get_u64("bytes", 0)) + " in " +
                        std::to_string(d->get_i64("files", 0)) + " files";
    if (storage >= 0) first += " (" + rate(100 * storage, 2) + "% from storage)";
    r.push_back({"data read, first", first,
                 storage >= 0 && storage < 0.1
                     ? "the files were in the page cache: a cold rate cannot be told"
                     : "-"});
    r.push_back(
        {"data read, again (page cache)", rate(d->get_double("second_mb_s", 0)) + " MB/s", "-"});
  } else {
    r.push_back({"data read", note_of(f, "read"), "-"});
  }
}

// /dev/shm against what a program's DataLoader needs.
void shm_row(const DoctorFigures& f, std::vector<Row>& r) {
  const ShmFacts& shm = f.facts.shm;
  const std::uint64_t need = dataloader_shm_need(f.needs);
  r.push_back(
      {"/dev/shm",
       shm.present ? format_bytes(shm.free) + " free of " + format_bytes(shm.total) : "missing",
       !f.needs.own_command
           ? std::string("dl-train's loader uses threads: none needed (a program after -- is "
                         "measured against its DataLoader's need)")
       : f.needs.workers <= 0
           ? std::string("no loader workers planned: a DataLoader needs none")
           : "a PyTorch DataLoader with " + std::to_string(f.needs.workers) + " worker(s) x " +
                 std::to_string(f.needs.local_ranks) + " rank(s) at batch " +
                 std::to_string(f.needs.batch) + ": about " + format_bytes(need)});
}

// The GPUs (NVML) and the copies to them.
void device_rows(const DoctorFigures& f, std::vector<Row>& r) {
  const GpuReport& gpu = f.facts.gpu;
  if (!gpu.available) {
    r.push_back({"GPU", "none", gpu.note});
  }
  for (const GpuInfo& g : gpu.gpus) {
    const std::string id = "cuda:" + std::to_string(g.index);
    r.push_back({id, g.name + ", " + format_bytes(g.total_bytes), "driver " + gpu.driver_version});
    if (g.max_sm_clock_mhz > 0) {
      r.push_back({id + " SM clock", std::to_string(g.sm_clock_mhz) + " MHz",
                   std::to_string(g.max_sm_clock_mhz) + " MHz at most (idle GPUs clock down)"});
    }
    if (g.max_pcie_width > 0) {
      r.push_back({id + " PCIe link",
                   "gen " + std::to_string(g.pcie_gen) + " x" + std::to_string(g.pcie_width) +
                       " (" + rate(pcie_gb_s(g.pcie_gen, g.pcie_width)) + " GB/s)",
                   "gen " + std::to_string(g.max_pcie_gen) + " x" +
                       std::to_string(g.max_pcie_width) + " at most (" +
                       rate(pcie_gb_s(g.max_pcie_gen, g.max_pcie_width)) + " GB/s)"});
    }
  }
  if (const JsonValue* c = measured(f, "copy", "pinned_gb_s")) {
    double limit = 0;
    for (const GpuInfo& g : gpu.gpus) {
      if ("cuda:" + std::to_string(g.index) == c->get_string("device", "")) {
        limit = pcie_gb_s(g.max_pcie_gen, g.max_pcie_width);
      }
    }
    const std::string link = limit > 0 ? rate(limit) + " GB/s, the link's limit" : std::string("-");
    r.push_back({"host-to-device, pinned", rate(c->get_double("pinned_gb_s", 0)) + " GB/s",
                 link + ratio(c->get_double("pinned_gb_s", 0), limit)});
    r.push_back({"host-to-device, pageable", rate(c->get_double("pageable_gb_s", 0)) + " GB/s",
                 link + ratio(c->get_double("pageable_gb_s", 0), limit)});
  } else {
    r.push_back({"host-to-device", note_of(f, "copy"), "-"});
  }
}

// The allreduce between the local ranks.
void exchange_row(const DoctorFigures& f, std::vector<Row>& r) {
  const DoctorReference& ref = doctor_reference();
  if (f.exchange) {
    const JsonValue& e = *f.exchange;
    const bool comparable = e.get_string("backend", "") == "gloo" && e.get_i64("ranks", 0) == 2;
    const double busbw = e.get_double("busbw_gb_s", 0);
    r.push_back({"allreduce, " + e.get_string("backend", "?") + " x" +
                     std::to_string(e.get_i64("ranks", 0)) + " local ranks",
                 rate(busbw) + " GB/s bus bandwidth (" + format_bytes(e.get_u64("bytes", 0)) +
                     " in " + rate(1000 * e.get_double("seconds", 0)) + " ms)",
                 comparable ? rate(ref.gloo_two_ranks_busbw_gb_s) + " GB/s" + kRefMachine +
                                  ratio(busbw, ref.gloo_two_ranks_busbw_gb_s)
                            : "-"});
  } else {
    r.push_back({"allreduce", f.exchange_note, "-"});
  }
}

std::vector<Row> rows(const DoctorFigures& f) {
  std::vector<Row> r;
  machine_rows(f, r);
  data_rows(f, r);
  shm_row(f, r);
  device_rows(f, r);
  exchange_row(f, r);
  return r;
}

// Copies a parsed value into the writer (dl-train's figures go into the JSON as they came).
void write_value(JsonWriter& w, const JsonValue& v) {
  switch (v.type()) {
    case JsonValue::Type::kObject:
      w.begin_object();
      for (const auto& [k, m] : v.members()) {
        w.key(k);
        write_value(w, m);
      }
      w.end_object();
      break;
    case JsonValue::Type::kArray:
      w.begin_array();
      for (const JsonValue& m : v.items()) write_value(w, m);
      w.end_array();
      break;
    case JsonValue::Type::kString:
      w.value(*v.as_string());
      break;
    case JsonValue::Type::kNumber:
      if (const auto whole = v.as_i64()) {
        w.value(*whole);  // counts and bytes stay whole numbers
      } else {
        w.value(*v.as_double());
      }
      break;
    case JsonValue::Type::kBool:
      w.value(*v.as_bool());
      break;
    case JsonValue::Type::kNull:
      w.null();
      break;
  }
}

}  // namespace

const DoctorReference& doctor_reference() {
  // The medians of three `dl-launch doctor --full` on the project's CI machine (bench/RESULTS.md,
  // "dl-launch doctor"): 2 cores of a cloud VM, 24 GiB.
  static const DoctorReference ref{
      "the project's CI machine (2 cores, 24 GiB)", 25.1, 42.6, 317, 454, 1.51};
  return ref;
}

double pcie_gb_s(unsigned gen, unsigned width) {
  // Transfers per second per lane by generation, and the line code's efficiency.
  static const double gt_s[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (gen == 0 || gen >= sizeof gt_s / sizeof gt_s[0]) return 0;
  const double efficiency = gen <= 2 ? 0.8 : 128.0 / 130.0;
  return gt_s[gen] * efficiency / 8 * width;
}

std::uint64_t dataloader_shm_need(const DoctorNeeds& needs) {
  if (!needs.own_command) return 0;
  return static_cast<std::uint64_t>(std::max(0, needs.workers)) *
         static_cast<std::uint64_t>(std::max(1, needs.local_ranks)) * kPrefetchPerWorker *
         static_cast<std::uint64_t>(std::max<std::int64_t>(0, needs.batch)) * needs.sample_bytes;
}

// How to get more cores, by what holds them back: a cgroup quota that binds is docker run
// --cpus (or Kubernetes' CPU limit); otherwise the affinity mask (docker run --cpuset-cpus,
// taskset, Slurm's --cpus-per-task).
std::string more_cores_hint(const CpuFacts& cpu) {
  const int mask = cpu.affinity.value_or(cpu.online);
  if (cpu.quota && static_cast<int>(std::ceil(*cpu.quota - 1e-9)) < mask) {
    return "raise the CPU quota (docker run --cpus, a Kubernetes CPU limit) for more loader "
           "throughput";
  }
  return "widen the affinity mask (docker run --cpuset-cpus, taskset -c, Slurm's "
         "--cpus-per-task) for more loader throughput";
}

namespace {

// Cores held back, /dev/shm, the memory bus.
void machine_findings(const DoctorFigures& f, std::vector<std::string>& lines) {
  const CpuFacts& cpu = f.facts.cpu;
  if (cpu.usable < cpu.online) {
    lines.push_back("only " + std::to_string(cpu.usable) + " of the machine's " +
                    std::to_string(cpu.online) + " cores are usable here (" + cpu.usable_reason +
                    "): workers and threads are planned for " + std::to_string(cpu.usable) + "; " +
                    more_cores_hint(cpu));
  }
  const ShmFacts& shm = f.facts.shm;
  const std::uint64_t need = dataloader_shm_need(f.needs);
  // dl-train's loader runs in threads: only a program's DataLoader workers pass batches
  // through /dev/shm.
  const bool dataloader = f.needs.own_command && f.needs.workers > 0;
  if (dataloader && !shm.present) {
    lines.push_back(
        "/dev/shm is missing: a PyTorch DataLoader's workers cannot hand over "
        "batches; mount one (docker run --shm-size=" +
        shm_size_to_pass(need) + ", or ipc: host)");
  } else if (dataloader && need > shm.free) {
    lines.push_back(
        "/dev/shm is " + format_bytes(shm.total) + " (" + format_bytes(shm.free) +
        " free): " + std::to_string(f.needs.workers * f.needs.local_ranks) +
        " DataLoader workers at batch " + std::to_string(f.needs.batch) + " need about " +
        format_bytes(need) + "; pass --shm-size=" + shm_size_to_pass(need) +
        " to docker run (shm_size: " + shm_size_to_pass(need) + "b in docker-compose.yml)");
  }
  const DoctorReference& ref = doctor_reference();
  if (f.memory.all_cores_gb_s > 0 && f.memory.all_cores_gb_s < 0.5 * ref.memory_all_cores_gb_s) {
    lines.push_back("memory copies run at " + rate(f.memory.all_cores_gb_s) + " GB/s on " +
                    std::to_string(f.memory.threads) + " cores, under half " + ref.machine + "'s " +
                    rate(ref.memory_all_cores_gb_s) +
                    " GB/s: another process may be using the memory bus; the loader's "
                    "normalisation and collation copy every batch at this rate");
  }
}

// Decoding at the crop's scale, storage against the decoders.
void data_speed_findings(const DoctorFigures& f, std::vector<std::string>& lines) {
  const CpuFacts& cpu = f.facts.cpu;
  const JsonValue* decode = measured(f, "decode", "full_per_core");
  if (decode != nullptr) {
    const double full = decode->get_double("full_per_core", 0);
    const double scaled = decode->get_double("scaled_per_core", 0);
    // dl-train decodes at the crop's scale already: a finding for a program's own loader.
    if (f.needs.own_command && full > 0 && scaled >= 1.5 * full) {
      lines.push_back("decoding " + decode->get_string("source", "the JPEGs") +
                      " at the crop's scale is " + rate(scaled / full, 2) +
                      "x faster than at full size (" + rate(scaled * cpu.usable) + " against " +
                      rate(full * cpu.usable) + " images/s on " + std::to_string(cpu.usable) +
                      " cores): dl-train and dl_loader decode at that scale; torchvision's "
                      "PIL loader decodes at full size (dl_loader: docs/python.md)");
    }
  }
  const JsonValue* read = measured(f, "read", "first_mb_s");
  if (read != nullptr && decode != nullptr) {
    const double storage = read->get_double("from_storage", -1);
    const double files = static_cast<double>(read->get_i64("files", 0));
    const double file_mb =
        files > 0 ? static_cast<double>(read->get_u64("bytes", 0)) / 1e6 / files : 0;
    const double decode_mb_s = decode->get_double("scaled_per_core", 0) * cpu.usable * file_mb;
    const double first = read->get_double("first_mb_s", 0);
    if (storage >= 0.5 && first < decode_mb_s) {
      lines.push_back("the data's first read from storage, " + rate(first) +
                      " MB/s, is slower than " + std::to_string(cpu.usable) + " cores decode it (" +
                      rate(decode_mb_s) +
                      " MB/s): epochs that miss the page cache wait on storage; put the data on "
                      "local SSD, or pack it into shards (dl-train pack --max-side) to read less");
    }
  }
}

// The PCIe links and pinned copies.
void device_findings(const DoctorFigures& f, std::vector<std::string>& lines) {
  for (const GpuInfo& g : f.facts.gpu.gpus) {
    if (g.max_pcie_width > 0 && g.pcie_width > 0 && g.pcie_width < g.max_pcie_width) {
      lines.push_back("cuda:" + std::to_string(g.index) + "'s PCIe link runs x" +
                      std::to_string(g.pcie_width) + " of its x" +
                      std::to_string(g.max_pcie_width) +
                      ": host-to-device copies are capped "
                      "near " +
                      rate(pcie_gb_s(g.max_pcie_gen, g.pcie_width)) +
                      " GB/s; seat the card in a slot with all its lanes");
    }
  }
  if (const JsonValue* c = measured(f, "copy", "pinned_gb_s")) {
    const double pinned = c->get_double("pinned_gb_s", 0);
    const double pageable = c->get_double("pageable_gb_s", 0);
    if (pageable > 0 && pinned >= 1.3 * pageable) {
      lines.push_back("pinned memory copies to " + c->get_string("device", "the GPU") + " " +
                      rate(pinned / pageable, 2) + "x faster than pageable (" + rate(pinned) +
                      " against " + rate(pageable) +
                      " GB/s): dl-train pins its batches; in a script, "
                      "DataLoader(pin_memory=True)");
    }
  }
}

// Unreadable files, data that does not open, dl-train missing.
void data_health_findings(const DoctorFigures& f, std::vector<std::string>& lines) {
  if (const JsonValue* r = part(f, "read"); r != nullptr && r->get_i64("unreadable", 0) > 0) {
    lines.push_back(std::to_string(r->get_i64("unreadable", 0)) + " of " +
                    std::to_string(r->get_i64("tried", 0)) +
                    " files read could not be: a run skips them and stops when more than "
                    "max-bad-fraction (default 0.01) of an epoch's samples are bad; first: " +
                    r->get_string("unreadable_example", "?"));
  }
  if (f.trainer) {
    const std::string error = f.trainer->get_string("data_error", "");
    if (!error.empty()) lines.push_back("the data did not open: " + error);
  } else if (!f.trainer_error.empty()) {
    lines.push_back("dl-train's measurements are missing: " + f.trainer_error);
  }
}

}  // namespace

std::vector<std::string> doctor_findings(const DoctorFigures& f) {
  std::vector<std::string> lines;
  machine_findings(f, lines);
  data_speed_findings(f, lines);
  device_findings(f, lines);
  data_health_findings(f, lines);
  return lines;
}

std::string render_doctor_text(const DoctorFigures& f) {
  const std::vector<Row> table = rows(f);
  std::size_t w0 = 6, w1 = 8;
  for (const Row& r : table) {
    w0 = std::max(w0, r.figure.size());
    w1 = std::max(w1, r.value.size());
  }
  w1 = std::min<std::size_t>(w1, 60);
  std::ostringstream out;
  out << "dl-launch doctor (" << (f.full ? "full" : "short") << ", " << rate(f.seconds, 3)
      << " s): this machine's ceilings against the plan's needs\n\n";
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c) {
    out << "  " << a << std::string(w0 - a.size() + 2, ' ') << b;
    out << std::string(b.size() < w1 ? w1 - b.size() + 2 : 2, ' ') << c << "\n";
  };
  line("figure", "measured", "reference");
  for (const Row& r : table) line(r.figure, r.value, r.reference);
  out << "\nreference: " << doctor_reference().machine << " (bench/RESULTS.md)\n";
  out << "the plan: " << f.needs.device << ", " << f.needs.local_ranks << " rank(s), "
      << f.needs.workers << " loader worker(s) (" << f.needs.workers_reason << "), batch "
      << f.needs.batch << " (" << f.needs.batch_reason << ")\n";
  const std::vector<std::string> findings = doctor_findings(f);
  if (findings.empty()) {
    out << "\nfindings: none: nothing measured here limits the plan\n";
  } else {
    out << "\nfindings:\n";
    for (const std::string& l : findings) out << "  - " << l << "\n";
  }
  return out.str();
}

std::string render_doctor_json(const DoctorFigures& f) {
  JsonWriter w;
  w.begin_object();
  w.key("mode").value(f.full ? "full" : "short");
  w.key("seconds").value(f.seconds);
  w.key("cpu").begin_object();
  w.key("online").value(f.facts.cpu.online);
  w.key("usable").value(f.facts.cpu.usable);
  w.key("reason").value(f.facts.cpu.usable_reason);
  w.end_object();
  w.key("memory").begin_object();
  w.key("usable_bytes").value(f.facts.memory.usable);
  w.key("copy_one_core_gb_s").value(f.memory.one_core_gb_s);
  w.key("copy_all_cores_gb_s").value(f.memory.all_cores_gb_s);
  w.key("copy_threads").value(f.memory.threads);
  w.end_object();
  w.key("shm").begin_object();
  w.key("present").value(f.facts.shm.present);
  w.key("total_bytes").value(f.facts.shm.total);
  w.key("free_bytes").value(f.facts.shm.free);
  w.key("dataloader_need_bytes").value(dataloader_shm_need(f.needs));
  w.end_object();
  w.key("gpus").begin_array();
  for (const GpuInfo& g : f.facts.gpu.gpus) {
    w.begin_object();
    w.key("index").value(g.index);
    w.key("name").value(g.name);
    w.key("total_bytes").value(g.total_bytes);
    w.key("sm_clock_mhz").value(static_cast<int>(g.sm_clock_mhz));
    w.key("max_sm_clock_mhz").value(static_cast<int>(g.max_sm_clock_mhz));
    w.key("memory_clock_mhz").value(static_cast<int>(g.memory_clock_mhz));
    w.key("max_memory_clock_mhz").value(static_cast<int>(g.max_memory_clock_mhz));
    w.key("pcie_gen").value(static_cast<int>(g.pcie_gen));
    w.key("pcie_width").value(static_cast<int>(g.pcie_width));
    w.key("max_pcie_gen").value(static_cast<int>(g.max_pcie_gen));
    w.key("max_pcie_width").value(static_cast<int>(g.max_pcie_width));
    w.key("pcie_limit_gb_s").value(pcie_gb_s(g.max_pcie_gen, g.max_pcie_width));
    w.end_object();
  }
  w.end_array();
  for (const char* name : {"decode", "read", "copy"}) {
    w.key(name);
    if (const JsonValue* p = part(f, name)) {
      write_value(w, *p);
    } else {
      w.begin_object().key("note").value(note_of(f, name)).end_object();
    }
  }
  w.key("exchange");
  if (f.exchange) {
    write_value(w, *f.exchange);
  } else {
    w.begin_object().key("note").value(f.exchange_note).end_object();
  }
  w.key("plan").begin_object();
  w.key("device").value(f.needs.device);
  w.key("local_ranks").value(f.needs.local_ranks);
  w.key("workers").value(f.needs.workers);
  w.key("batch").value(f.needs.batch);
  w.key("sample_bytes").value(f.needs.sample_bytes);
  w.end_object();
  const DoctorReference& ref = doctor_reference();
  w.key("reference").begin_object();
  w.key("machine").value(ref.machine);
  w.key("copy_one_core_gb_s").value(ref.memory_one_core_gb_s);
  w.key("copy_all_cores_gb_s").value(ref.memory_all_cores_gb_s);
  w.key("jpeg_full_per_core").value(ref.jpeg_full_per_core);
  w.key("jpeg_scaled_per_core").value(ref.jpeg_scaled_per_core);
  w.key("gloo_two_ranks_busbw_gb_s").value(ref.gloo_two_ranks_busbw_gb_s);
  w.end_object();
  w.key("findings").begin_array();
  for (const std::string& l : doctor_findings(f)) w.value(l);
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace dl
