// metrics.csv read back, and the bounded resource history (metrics_history.h).
#include "report/metrics_history.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/text.h"

namespace dl::report {
namespace {

bool to_double(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

}  // namespace

std::vector<EpochPoint> parse_metrics_csv(const std::string& text, int up_to) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::map<int, EpochPoint> by_epoch;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto fields = split(line, ',');
    if (fields.empty()) continue;
    if (fields[0] == "epoch") {  // the header (written again if the file was started over)
      header = fields;
      continue;
    }
    if (header.empty() || fields.size() != header.size()) continue;
    EpochPoint p;
    double epoch = 0;
    bool ok = true;
    for (std::size_t i = 0; i < header.size() && ok; ++i) {
      const std::string& h = header[i];
      if (h == "bound") {  // the verdict's name: text, kept when it looks like one
        const bool named =
            fields[i].size() <= 32 && !fields[i].empty() &&
            fields[i].find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos;
        if (named) p.bound = fields[i];
        continue;
      }
      double v = 0;
      ok = to_double(fields[i], &v);
      if (h.size() > 7 && h.compare(0, 5, "time_") == 0 && h.compare(h.size() - 2, 2, "_s") == 0) {
        p.time_seconds.emplace_back(h.substr(5, h.size() - 7), v);
      } else if (h == "epoch")
        epoch = v;
      else if (h == "train_loss")
        p.train_loss = v;
      else if (h == "train_acc")
        p.train_acc = v;
      else if (h == "val_loss")
        p.val_loss = v;
      else if (h == "val_acc")
        p.val_acc = v;
      else if (h == "lr")
        p.lr = v;
      else if (h == "epoch_seconds")
        p.seconds = v;
      else if (h == "samples_per_second")
        p.samples_per_second = v;
      else if (h == "data_wait_percent")
        p.data_wait_percent = v;
    }
    // Written so that NaN fails too (its cast to int would be undefined).
    if (!ok || !(epoch >= 1 && epoch <= up_to)) continue;
    p.epoch = static_cast<int>(epoch);
    by_epoch[p.epoch] = p;
  }
  std::vector<EpochPoint> out;
  for (const auto& [epoch, p] : by_epoch) out.push_back(p);
  return out;
}

void ResourceHistory::add(const ResourcePoint& p) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (points_.size() >= capacity_) {
    // Keep the even ones (the first sample stays, so the x axis still starts at the start).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < points_.size(); i += 2) points_[kept++] = points_[i];
    points_.resize(kept);
  }
  points_.push_back(p);
}

std::vector<ResourcePoint> ResourceHistory::snapshot() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return points_;
}

}  // namespace dl::report
