// Confusion matrix arithmetic and CSV text (confusion.h).
#include "train/monitor/confusion.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/errors.h"
#include "core/files.h"

namespace dl::train {

Confusion::Confusion(int classes)
    : classes_(classes), counts_(static_cast<std::size_t>(classes) * classes, 0) {
  if (classes < 0) throw std::invalid_argument("Confusion: negative class count");
}

Confusion::Confusion(int classes, std::vector<std::int64_t> counts)
    : classes_(classes), counts_(std::move(counts)) {
  if (classes < 0 || counts_.size() != static_cast<std::size_t>(classes) * classes) {
    throw std::invalid_argument("Confusion: counts are not classes x classes");
  }
  for (const std::int64_t c : counts_) {
    if (c < 0) throw std::invalid_argument("Confusion: negative count");
  }
}

std::int64_t Confusion::at(int true_class, int predicted) const {
  return counts_.at(static_cast<std::size_t>(true_class) * classes_ + predicted);
}

void Confusion::add(int true_class, int predicted, std::int64_t n) {
  if (true_class < 0 || true_class >= classes_ || predicted < 0 || predicted >= classes_) {
    throw std::out_of_range("Confusion: class index out of range");
  }
  counts_[static_cast<std::size_t>(true_class) * classes_ + predicted] += n;
}

std::int64_t Confusion::total() const {
  std::int64_t n = 0;
  for (const std::int64_t c : counts_) n += c;
  return n;
}

std::int64_t Confusion::correct() const {
  std::int64_t n = 0;
  for (int k = 0; k < classes_; ++k) n += at(k, k);
  return n;
}

std::int64_t Confusion::row_total(int true_class) const {
  std::int64_t n = 0;
  for (int p = 0; p < classes_; ++p) n += at(true_class, p);
  return n;
}

double Confusion::top1() const {
  const std::int64_t n = total();
  return n > 0 ? static_cast<double>(correct()) / static_cast<double>(n) : 0.0;
}

std::vector<double> Confusion::per_class_accuracy() const {
  std::vector<double> out;
  for (int k = 0; k < classes_; ++k) {
    const std::int64_t n = row_total(k);
    out.push_back(n > 0 ? static_cast<double>(at(k, k)) / static_cast<double>(n)
                        : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') out += '"';
  }
  return out + "\"";
}

namespace {

void require_names(const Confusion& m, const std::vector<std::string>& names) {
  if (names.size() != static_cast<std::size_t>(m.classes())) {
    throw std::invalid_argument("confusion CSV: " + std::to_string(names.size()) +
                                " class names for " + std::to_string(m.classes()) + " classes");
  }
}

}  // namespace

std::string confusion_csv(const Confusion& m, const std::vector<std::string>& names) {
  require_names(m, names);
  std::string out = "true\\predicted";
  for (const std::string& name : names) out += "," + csv_cell(name);
  out += "\n";
  for (int t = 0; t < m.classes(); ++t) {
    out += csv_cell(names[static_cast<std::size_t>(t)]);
    for (int p = 0; p < m.classes(); ++p) out += "," + std::to_string(m.at(t, p));
    out += "\n";
  }
  return out;
}

void write_confusion(const std::string& dir, const Confusion& m,
                     const std::vector<std::string>& names) {
  const std::string path = dir + "/confusion.csv";
  try {
    write_file_atomic(path, confusion_csv(m, names));
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError(exit_code::kCantWrite, path + ": " + e.what());
  }
}

std::string per_class_csv(const Confusion& m, const std::vector<std::string>& names) {
  require_names(m, names);
  std::string out = "class,name,samples,correct,accuracy\n";
  const std::vector<double> accuracy = m.per_class_accuracy();
  for (int k = 0; k < m.classes(); ++k) {
    const double a = accuracy[static_cast<std::size_t>(k)];
    out += fmt::format("{},{},{},{},{}\n", k, csv_cell(names[static_cast<std::size_t>(k)]),
                       m.row_total(k), m.at(k, k), std::isnan(a) ? "" : fmt::format("{:.6f}", a));
  }
  return out;
}

}  // namespace dl::train
