// The confusion matrix of a classifier over a data set (rows: true class, columns: predicted
// class) and what is read from it: top-1 accuracy, per-class accuracy, and its CSV files. Plain
// numbers, no LibTorch: validation and `dl-train evaluate` count on the device and hand the
// counts here; the HTML report reads them from the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl::train {

class Confusion {
 public:
  Confusion() = default;
  explicit Confusion(int classes);
  // `counts`: classes x classes, row-major (row = true class). Throws std::invalid_argument when
  // its size is not classes^2 or a count is negative.
  Confusion(int classes, std::vector<std::int64_t> counts);

  int classes() const { return classes_; }
  std::int64_t at(int true_class, int predicted) const;
  void add(int true_class, int predicted, std::int64_t n = 1);
  const std::vector<std::int64_t>& counts() const { return counts_; }

  std::int64_t total() const;
  std::int64_t correct() const;  // the trace
  std::int64_t row_total(int true_class) const;
  double top1() const;  // correct / total, 0 without samples
  // Per true class: correct / samples of that class; NaN for a class without samples.
  std::vector<double> per_class_accuracy() const;

 private:
  int classes_ = 0;
  std::vector<std::int64_t> counts_;
};

// One CSV cell: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& text);

// "true\predicted,<names...>" then one row per true class: its name and its counts. `names` has
// classes() entries.
std::string confusion_csv(const Confusion& m, const std::vector<std::string>& names);

// Writes confusion_csv to <dir>/confusion.csv atomically (a reader never sees half a file).
// Throws UserError 73 naming the file when it cannot be written.
void write_confusion(const std::string& dir, const Confusion& m,
                     const std::vector<std::string>& names);

// "class,name,samples,correct,accuracy": one row per class; the accuracy is empty for a class
// without samples.
std::string per_class_csv(const Confusion& m, const std::vector<std::string>& names);

}  // namespace dl::train
