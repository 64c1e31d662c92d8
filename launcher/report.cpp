// Rendering of facts and plan.
#include "report.h"

#include <cstdio>
#include <sstream>

#include "json_writer.h"
#include "text.h"

namespace dl {
namespace {

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string row(const std::string& name, const std::string& value, const std::string& reason) {
  return "  " + pad(name, 11) + pad(value, 9) + " (" + reason + ")\n";
}

std::string cpu_line(const CpuFacts& c) {
  return std::to_string(c.usable) + " usable  (" + c.usable_reason + ")";
}

std::string memory_line(const MemoryFacts& m) {
  std::string s =
      format_bytes(m.usable) + " usable of " + format_bytes(m.total) + "  (" + m.usable_reason;
  s += m.cgroup_limit ? "; cgroup limit " + format_bytes(*m.cgroup_limit)
                      : std::string("; no cgroup limit");
  return s + ")";
}

std::string gpu_lines(const GpuReport& g) {
  if (g.gpus.empty()) return "none  (" + g.note + ")\n";
  std::string s = std::to_string(g.gpus.size()) + "  (driver " + g.driver_version + ")\n";
  for (const auto& gpu : g.gpus) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "    cuda:%d  %s, %s free of %s, compute capability %d.%d\n",
                  gpu.index, gpu.name.c_str(), format_bytes(gpu.free_bytes).c_str(),
                  format_bytes(gpu.total_bytes).c_str(), gpu.cc_major, gpu.cc_minor);
    s += buf;
  }
  return s;
}

void json_choice(JsonWriter& w, const char* name, const Choice<int>& c) {
  w.key(name).begin_object().key("value").value(c.value).key("reason").value(c.reason).end_object();
}

void json_choice(JsonWriter& w, const char* name, const Choice<std::string>& c) {
  w.key(name).begin_object().key("value").value(c.value).key("reason").value(c.reason).end_object();
}

}  // namespace

std::string render_text(const Launch& l, bool dry_run) {
  const Facts& f = l.facts;
  std::ostringstream out;
  out << "machine\n";
  out << "  cpu        " << cpu_line(f.cpu) << "\n";
  out << "  memory     " << memory_line(f.memory) << "\n";
  out << "  /dev/shm   "
      << (f.shm.present ? format_bytes(f.shm.free) + " free of " + format_bytes(f.shm.total)
                        : std::string("missing"))
      << "\n";
  out << "  gpu        " << gpu_lines(f.gpu);
  out << "plan\n";
  out << row("device", l.plan.device.value, l.plan.device.reason);
  out << row("precision", l.plan.precision.value, l.plan.precision.reason);
  out << row("workers", std::to_string(l.plan.workers.value), l.plan.workers.reason);
  out << row("threads", std::to_string(l.plan.threads.value), l.plan.threads.reason);
  out << row("batch", std::to_string(l.plan.batch_size.value), l.plan.batch_size.reason);
  const Request& r = l.request;
  out << row(
      "data", r.samples ? std::to_string(r.samples->value) : std::string("unknown"),
      (r.samples ? "samples from " + r.samples->source : std::string("size not given: --samples")) +
          "; " + format_bytes(r.sample_bytes.value) + " per sample: " + r.sample_bytes.source);
  out << "run\n";
  out << "  command    ";
  for (size_t i = 0; i < l.command.size(); ++i) out << (i ? " " : "") << l.command[i];
  out << "\n  workspace  " << l.workspace << "\n";
  if (l.config_file) out << "  config     " << *l.config_file << "\n";
  out << "  run dir    " << l.run_dir << (dry_run ? "  (not created: dry run)" : "") << "\n";
  if (!l.plan.warnings.empty()) {
    out << "warnings\n";
    for (const auto& w : l.plan.warnings) out << "  ! " << w << "\n";
  }
  return out.str();
}

std::string render_json(const Launch& l) {
  const Facts& f = l.facts;
  JsonWriter w;
  w.begin_object();
  w.key("format").value("dl-launch-plan").key("version").value(1);
  w.key("facts").begin_object();
  w.key("cpu").begin_object();
  w.key("online").value(f.cpu.online);
  w.key("affinity");
  f.cpu.affinity ? w.value(*f.cpu.affinity) : w.null();
  w.key("cgroup_quota");
  f.cpu.quota ? w.value(*f.cpu.quota) : w.null();
  w.key("usable").value(f.cpu.usable).key("reason").value(f.cpu.usable_reason);
  w.end_object();
  w.key("memory").begin_object();
  w.key("total_bytes").value(f.memory.total).key("available_bytes").value(f.memory.available);
  w.key("cgroup_limit_bytes");
  f.memory.cgroup_limit ? w.value(*f.memory.cgroup_limit) : w.null();
  w.key("usable_bytes").value(f.memory.usable).key("reason").value(f.memory.usable_reason);
  w.end_object();
  w.key("shm").begin_object();
  w.key("present").value(f.shm.present).key("total_bytes").value(f.shm.total);
  w.key("free_bytes").value(f.shm.free).end_object();
  w.key("cgroup_version").value(f.cgroup_version);
  w.key("gpu").begin_object();
  w.key("note").value(f.gpu.note).key("driver_version").value(f.gpu.driver_version);
  w.key("devices").begin_array();
  for (const auto& g : f.gpu.gpus) {
    w.begin_object().key("index").value(g.index).key("name").value(g.name);
    w.key("total_bytes").value(g.total_bytes).key("free_bytes").value(g.free_bytes);
    w.key("compute_capability")
        .value(std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor));
    w.end_object();
  }
  w.end_array().end_object();
  w.end_object();  // facts

  w.key("plan").begin_object();
  json_choice(w, "device", l.plan.device);
  json_choice(w, "precision", l.plan.precision);
  json_choice(w, "workers", l.plan.workers);
  json_choice(w, "threads", l.plan.threads);
  json_choice(w, "batch_size", l.plan.batch_size);
  w.key("warnings").begin_array();
  for (const auto& warning : l.plan.warnings) w.value(warning);
  w.end_array().end_object();

  w.key("workspace").value(l.workspace);
  w.key("config_file");
  l.config_file ? w.value(*l.config_file) : w.null();
  w.key("run_name").value(l.run_name).key("run_dir").value(l.run_dir);
  w.key("command").begin_array();
  for (const auto& a : l.command) w.value(a);
  w.end_array();
  w.key("env").begin_object();
  for (const auto& [k, v] : l.env) w.key(k).value(v);
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace dl
