// Rendering of facts and plan.
#include "launcher/report.h"

#include <cstdio>
#include <sstream>

#include "core/json.h"
#include "core/text.h"
#include "launcher/checkpoint_command.h"
#include "launcher/cuda_compat.h"

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
  std::string s = std::to_string(g.gpus.size()) + "  (driver " + g.driver_version;
  if (g.cuda_driver_version > 0) s += ", CUDA " + to_string(cuda_from_nvml(g.cuda_driver_version));
  s += ")\n";
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

std::string seconds(double s, const char* format = "%.1f s") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, s);
  return buf;
}

// The batch-size search: each trial, the total time, and whether the answer came from the cache.
std::string search_lines(const BatchSearchRecord& s, bool dry_run) {
  std::string out = "batch search  " + s.objective + " batch within " + format_bytes(s.budget) +
                    " (" + s.budget_reason + ")";
  if (s.max_batch > 0) out += ", at most " + std::to_string(s.max_batch) + " (the data set)";
  out += "\n  " + pad("batch", 9) + pad("peak", 12) + pad("result", 15) + pad("step", 11) +
         "samples/s\n";
  for (const auto& t : s.result.trials) {
    const bool measured = t.error.empty() && !t.out_of_memory;
    const double rate = samples_per_second(t);
    out += "  " + pad(std::to_string(t.batch), 9) +
           pad(measured ? format_bytes(t.peak_bytes) : std::string("-"), 12) +
           pad(trial_outcome(t, s.budget), 15) +
           pad(t.step_seconds > 0 ? seconds(t.step_seconds, "%.3f s") : std::string("-"), 11) +
           (rate > 0 ? seconds(rate, "%.0f") : std::string("-")) + "\n";
  }
  if (!s.result.choice.why.empty()) out += "  chosen: " + s.result.choice.why + "\n";
  const std::string probes =
      std::to_string(s.result.trials.size()) + " probes in " + seconds(s.seconds);
  out += "  -> " + std::to_string(s.result.batch) + ": ";
  if (s.cached) {
    out += "cached in " + s.cache_file + " (searched " + s.searched_at + ", " + probes +
           "); no probe ran; --retune searches again\n";
  } else {
    out += probes + "; " +
           (s.cache_written ? "stored in " + s.cache_file
                            : std::string(dry_run ? "not cached: dry run" : "not cached")) +
           "\n";
  }
  return out;
}

void json_search(JsonWriter& w, const std::optional<BatchSearchRecord>& search) {
  w.key("batch_search");
  if (!search) {
    w.null();
    return;
  }
  const BatchSearchRecord& s = *search;
  w.begin_object();
  w.key("batch").value(s.result.batch).key("reason").value(s.result.reason);
  const BatchChoice& c = s.result.choice;
  w.key("objective").value(s.objective).key("why").value(c.why);
  w.key("largest").value(c.largest).key("fastest").value(c.fastest);
  w.key("best_samples_per_second").value(c.best_rate);
  w.key("budget_bytes").value(s.budget).key("budget_reason").value(s.budget_reason);
  w.key("max_batch").value(s.max_batch);
  w.key("fixed_bytes").value(s.result.fixed_bytes);
  w.key("per_sample_bytes").value(s.result.per_sample_bytes);
  w.key("seconds").value(s.seconds).key("searched_at").value(s.searched_at);
  w.key("cached").value(s.cached).key("cache_written").value(s.cache_written);
  w.key("cache_file").value(s.cache_file).key("cache_key").value(s.cache_key);
  w.key("trials").begin_array();
  for (const auto& t : s.result.trials) {
    w.begin_object();
    w.key("batch").value(t.batch);
    w.key("fits").value(t.error.empty() && !t.out_of_memory && t.peak_bytes <= s.budget);
    w.key("out_of_memory").value(t.out_of_memory).key("peak_bytes").value(t.peak_bytes);
    w.key("step_seconds").value(t.step_seconds);
    w.key("samples_per_second").value(samples_per_second(t)).key("error").value(t.error);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// The ranks: the scheduler, the topology, each process started here, the batch over all ranks
// and the learning rate. One process on one node says so in one line.
std::string rank_lines(const Launch& l) {
  const Plan& p = l.plan;
  const Topology& t = p.topology;
  std::string out = "ranks\n";
  if (t.scheduler != "none") out += row("scheduler", t.scheduler, t.scheduler_evidence);
  out += row("processes", std::to_string(t.nproc.value), t.nproc.reason);
  if (t.world_size.value == 1 && p.ranks.size() <= 1) {
    if (p.learning_rate_asked) out += row("lr", p.learning_rate.value, p.learning_rate.reason);
    for (const auto& n : t.notes) out += "  note: " + n + "\n";
    return out;
  }
  out += row("nodes", std::to_string(t.nnodes.value), t.nnodes.reason);
  out += row("node rank", std::to_string(t.node_rank.value), t.node_rank.reason);
  out += row("world", std::to_string(t.world_size.value), t.world_size.reason);
  out += row("master", t.master_addr.value, t.master_addr.reason);
  out += row("port", std::to_string(t.master_port.value), t.master_port.reason);
  out += row("global batch", std::to_string(p.global_batch.value), p.global_batch.reason);
  out += row("lr", p.learning_rate.value, p.learning_rate.reason);
  out += "  " + pad("rank", 6) + pad("local", 7) + pad("device", 9) + pad("cores", 7) +
         pad("workers", 9) + pad("threads", 9) + "log\n";
  for (const auto& r : p.ranks) {
    out += "  " + pad(std::to_string(r.global_rank), 6) + pad(std::to_string(r.local_rank), 7) +
           pad(r.device, 9) + pad(std::to_string(r.cores.value), 7) +
           pad(p.workers_measured ? "auto" : std::to_string(r.workers.value), 9) +
           pad(p.threads_measured ? "auto" : std::to_string(r.threads.value), 9) + "rank-" +
           std::to_string(r.global_rank) + ".log" +
           (r.cpus.empty() ? "" : "  (pinned to CPUs " + cpu_list_text(r.cpus) + ")") + "\n";
  }
  if (!p.ranks.empty()) out += "  cores: " + p.ranks.front().cores.reason + "\n";
  for (const auto& n : t.notes) out += "  note: " + n + "\n";
  return out;
}

void json_ranks(JsonWriter& w, const Launch& l) {
  const Plan& p = l.plan;
  const Topology& t = p.topology;
  w.key("ranks").begin_object();
  w.key("scheduler").value(t.scheduler).key("scheduler_evidence").value(t.scheduler_evidence);
  json_choice(w, "nproc_per_node", t.nproc);
  json_choice(w, "nnodes", t.nnodes);
  json_choice(w, "node_rank", t.node_rank);
  json_choice(w, "world_size", t.world_size);
  json_choice(w, "master_addr", t.master_addr);
  json_choice(w, "master_port", t.master_port);
  w.key("local_world_size").value(t.local_world_size);
  w.key("global_batch")
      .begin_object()
      .key("value")
      .value(static_cast<std::int64_t>(p.global_batch.value));
  w.key("reason").value(p.global_batch.reason).end_object();
  json_choice(w, "learning_rate", p.learning_rate);
  w.key("lr_factor").value(p.lr_factor);
  w.key("plan_file").value(plan_file_name(l));
  w.key("processes").begin_array();
  for (const auto& r : p.ranks) {
    w.begin_object().key("rank").value(r.global_rank).key("local_rank").value(r.local_rank);
    w.key("device").value(r.device);
    json_choice(w, "cores", r.cores);
    json_choice(w, "workers", r.workers);
    json_choice(w, "threads", r.threads);
    w.key("cpus").value(cpu_list_text(r.cpus));
    w.key("log").value(l.run_dir + "/rank-" + std::to_string(r.global_rank) + ".log");
    w.end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : t.notes) w.value(n);
  w.end_array();
  w.end_object();
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
  out << row("workers", l.plan.workers_measured ? "auto" : std::to_string(l.plan.workers.value),
             l.plan.workers.reason);
  out << row("threads", l.plan.threads_measured ? "auto" : std::to_string(l.plan.threads.value),
             l.plan.threads.reason);
  out << row("batch", std::to_string(l.plan.batch_size.value), l.plan.batch_size.reason);
  const Request& r = l.request;
  out << row(
      "data", r.samples ? std::to_string(r.samples->value) : std::string("unknown"),
      (r.samples ? "samples from " + r.samples->source : std::string("size not given: --samples")) +
          "; " + format_bytes(r.sample_bytes.value) + " per sample: " + r.sample_bytes.source);
  if (l.plan.batch_search) out << search_lines(*l.plan.batch_search, dry_run);
  out << rank_lines(l);
  out << "run\n";
  out << "  command    ";
  for (size_t i = 0; i < l.command.size(); ++i) out << (i ? " " : "") << l.command[i];
  out << "\n  workspace  " << l.workspace << "\n";
  if (l.config_file) out << "  config     " << *l.config_file << "\n";
  out << "  run dir    " << l.run_dir << (dry_run ? "  (not created: dry run)" : "") << "\n";
  // dl-train's training writes the report; its evaluate and predict (`dl-launch evaluate`) write
  // their results beside the checkpoint, and another program writes what it writes.
  const bool trainer_subcommand = l.command.size() > 1 && is_checkpoint_word(l.command[1]);
  if (!dry_run && l.request.default_program && !trainer_subcommand) {
    out << "  report     " << l.run_dir << "/report.html  (dl-train rewrites it at each epoch "
        << "end; open it in a browser)\n";
  }
  if (l.run_as) {
    out << "  user       " << describe_user(l.run_as->uid) << ", group " << l.run_as->gid
        << "  (the workspace's owner: its files stay theirs; --run-as-owner false runs as root)\n";
  }
  if (!l.plan.warnings.empty()) {
    out << "warnings\n";
    for (const auto& w : l.plan.warnings) out << "  ! " << w << "\n";
  }
  return out.str();
}

namespace {

// The machine as the probe saw it: the "facts" member of plan.json.
void json_facts(JsonWriter& w, const Facts& f) {
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
  w.key("driver_cuda");
  f.gpu.cuda_driver_version > 0 ? w.value(to_string(cuda_from_nvml(f.gpu.cuda_driver_version)))
                                : w.null();
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
}

// A program after --: whether it spoke the probe protocol, and its loader probes.
void json_script_probes(JsonWriter& w, const std::optional<ScriptProbeRecord>& r) {
  w.key("script_probes");
  if (!r) {
    w.null();
    return;
  }
  w.begin_object();
  w.key("speaks_protocol").value(r->speaks_protocol).key("no_handshake").value(r->no_handshake);
  w.key("cached").value(r->cached).key("seconds").value(r->seconds);
  w.key("probed_at").value(r->probed_at);
  w.key("workers");
  r->workers_searched ? w.value(r->workers.workers) : w.null();
  w.key("worker_trials").begin_array();
  for (const auto& t : r->workers.trials) {
    w.begin_object().key("workers").value(t.workers);
    w.key("samples_per_second").value(t.samples_per_second);
    w.key("host_bytes").value(t.host_bytes).end_object();
  }
  w.end_array().end_object();
}

}  // namespace

std::string render_json(const Launch& l) {
  JsonWriter w;
  w.begin_object();
  w.key("format").value("dl-launch-plan").key("version").value(1);
  json_facts(w, l.facts);

  w.key("plan").begin_object();
  json_choice(w, "device", l.plan.device);
  json_choice(w, "precision", l.plan.precision);
  json_choice(w, "workers", l.plan.workers);
  json_choice(w, "threads", l.plan.threads);
  w.key("workers_measured").value(l.plan.workers_measured);
  w.key("threads_measured").value(l.plan.threads_measured);
  json_choice(w, "batch_size", l.plan.batch_size);
  if (const auto& a = l.plan.accumulation) {
    w.key("accumulation").begin_object().key("per_rank").value(a->per_rank);
    w.key("micro_batch").value(a->micro).key("steps").value(a->steps).end_object();
  }
  // What the plan knew of the data: its training samples (null: unknown) and one input's bytes.
  w.key("data").begin_object().key("samples");
  l.request.samples ? w.value(l.request.samples->value) : w.null();
  w.key("samples_source").value(l.request.samples ? l.request.samples->source : std::string());
  w.key("sample_bytes").value(l.request.sample_bytes.value);
  w.key("sample_bytes_source").value(l.request.sample_bytes.source).end_object();
  w.key("warnings").begin_array();
  for (const auto& warning : l.plan.warnings) w.value(warning);
  w.end_array().end_object();
  json_search(w, l.plan.batch_search);
  json_script_probes(w, l.script_probe);
  json_ranks(w, l);

  w.key("workspace").value(l.workspace);
  w.key("config_file");
  l.config_file ? w.value(*l.config_file) : w.null();
  w.key("run_name").value(l.run_name).key("run_dir").value(l.run_dir);
  w.key("run_as");
  if (l.run_as) {
    w.begin_object().key("uid").value(static_cast<std::uint64_t>(l.run_as->uid));
    w.key("gid").value(static_cast<std::uint64_t>(l.run_as->gid)).end_object();
  } else {
    w.null();
  }
  w.key("settings").begin_object();
  for (const auto& [key, given] : l.settings) {
    w.key(key).begin_object().key("value").value(given.value);
    w.key("source").value(given.source).end_object();
  }
  w.end_object();
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
