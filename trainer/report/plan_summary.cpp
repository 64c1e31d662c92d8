// plan.json (launcher/report.cpp's render_json) to the report's rows. Members that are missing
// are skipped: an older or newer plan still shows what it has.
#include "report/plan_summary.h"

#include <cstdio>

#include "core/json.h"
#include "core/text.h"

namespace dl::report {
namespace {

std::string value_text(const JsonValue& v) {
  if (auto s = v.as_string()) return *s;
  if (auto i = v.as_i64()) return std::to_string(*i);
  if (auto d = v.as_double()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (auto b = v.as_bool()) return *b ? "true" : "false";
  return "-";
}

// {"value": ..., "reason": "..."} as a row.
void add_choice(const JsonValue& parent, const char* key, const char* name,
                std::vector<ReportRow>& rows) {
  const JsonValue* c = parent.find(key);
  if (c == nullptr || !c->is_object()) return;
  const JsonValue* v = c->find("value");
  rows.push_back({name, v != nullptr ? value_text(*v) : "-", c->get_string("reason", "")});
}

std::string bytes(const JsonValue& o, const char* key) {
  return format_bytes(o.get_u64(key, 0));
}

void read_facts(const JsonValue& facts, RunReport& r) {
  if (const JsonValue* cpu = facts.find("cpu")) {
    r.machine.push_back({"cpu",
                         std::to_string(cpu->get_i64("usable", 0)) + " usable of " +
                             std::to_string(cpu->get_i64("online", 0)) + " online",
                         cpu->get_string("reason", "")});
  }
  if (const JsonValue* mem = facts.find("memory")) {
    r.machine.push_back({"memory",
                         bytes(*mem, "usable_bytes") + " usable of " + bytes(*mem, "total_bytes"),
                         mem->get_string("reason", "")});
  }
  if (const JsonValue* shm = facts.find("shm")) {
    r.machine.push_back({"/dev/shm",
                         shm->get_bool("present", false)
                             ? bytes(*shm, "free_bytes") + " free of " + bytes(*shm, "total_bytes")
                             : "missing",
                         ""});
  }
  if (const JsonValue* gpu = facts.find("gpu")) {
    const JsonValue* devices = gpu->find("devices");
    if (devices == nullptr || devices->items().empty()) {
      r.machine.push_back({"gpu", "none", gpu->get_string("note", "")});
    } else {
      for (const auto& d : devices->items()) {
        r.machine.push_back({"cuda:" + std::to_string(d.get_i64("index", 0)),
                             d.get_string("name", "?") + ", " + bytes(d, "total_bytes"),
                             "compute capability " + d.get_string("compute_capability", "?") +
                                 ", driver " + gpu->get_string("driver_version", "?")});
      }
    }
  }
}

}  // namespace

void read_plan_json(const std::string& text, RunReport& r) {
  std::string error;
  const auto doc = parse_json(text, &error);
  if (!doc || !doc->is_object() || doc->get_string("format", "") != "dl-launch-plan") {
    r.has_plan = false;
    r.plan_note = "plan.json is not a dl-launch plan" + (error.empty() ? "" : ": " + error);
    return;
  }
  r.has_plan = true;
  if (const JsonValue* facts = doc->find("facts")) read_facts(*facts, r);
  if (const JsonValue* plan = doc->find("plan")) {
    add_choice(*plan, "device", "device", r.plan);
    add_choice(*plan, "precision", "precision", r.plan);
    add_choice(*plan, "batch_size", "batch", r.plan);
    add_choice(*plan, "workers", "workers", r.plan);
    add_choice(*plan, "threads", "threads", r.plan);
    if (const JsonValue* w = plan->find("warnings")) {
      for (const auto& item : w->items()) {
        if (auto s = item.as_string()) r.plan_warnings.push_back(*s);
      }
    }
  }
  if (const JsonValue* search = doc->find("batch_search"); search != nullptr && search->is_object()) {
    r.batch_chosen = search->get_i64("batch", 0);
    r.batch_budget_bytes = search->get_double("budget_bytes", 0);
    r.batch_why = search->get_string("why", "");
    if (const JsonValue* trials = search->find("trials"); trials != nullptr && trials->is_array()) {
      for (const auto& t : trials->items()) {
        const double peak = t.get_double("peak_bytes", 0);
        const double seconds = t.get_double("step_seconds", 0);
        const double batch = t.get_double("batch", 0);
        // Older plans carry no samples_per_second: batch / step time is the same figure.
        const double rate =
            t.get_double("samples_per_second", seconds > 0 ? batch / seconds : 0.0);
        r.batch_probes.push_back({batch, rate, peak, t.get_bool("fits", false)});
      }
    }
  }
  if (const JsonValue* ranks = doc->find("ranks")) {
    add_choice(*ranks, "world_size", "processes", r.plan);
    add_choice(*ranks, "global_batch", "global batch", r.plan);
    add_choice(*ranks, "learning_rate", "learning rate", r.plan);
  }
}

}  // namespace dl::report
