// CSV manifest parsing (see csv_manifest.h).
#include "data/csv_manifest.h"

#include <cctype>
#include <climits>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/text.h"
#include "data/data_error.h"
#include "data/file_list_source.h"

namespace dl::data {
namespace {

bool is_header(const std::string& line) {
  std::string lower;
  for (const char c : line) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return lower == "path,label";
}

// "a,""b"".jpg" -> a,"b".jpg; unquoted text is returned as is.
std::string unquote(const std::string& field) {
  if (field.size() < 2 || field.front() != '"' || field.back() != '"') return field;
  std::string out;
  for (std::size_t i = 1; i + 1 < field.size(); ++i) {
    out.push_back(field[i]);
    if (field[i] == '"' && field[i + 1] == '"') ++i;
  }
  return out;
}

// A non-negative decimal integer that fits an int (num_classes is an int); -1 otherwise.
long long parse_label(const std::string& text) {
  if (text.empty() || text.size() > 10) return -1;
  long long value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value < INT_MAX ? value : -1;
}

}  // namespace

std::unique_ptr<SampleSource> open_csv_manifest(const std::string& csv_path,
                                                const ImageFileOptions& options) {
  namespace fs = std::filesystem;
  std::ifstream in(csv_path);
  if (!in) throw DataError(csv_path + ": cannot open the CSV manifest (no such file?)");
  const fs::path base = fs::path(csv_path).parent_path();
  std::vector<LabelledFile> files;
  std::string line;
  int line_no = 0;
  bool seen_content = false;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string text = trim(line);  // also drops the \r of CRLF files
    if (text.empty()) continue;
    if (!seen_content) {
      seen_content = true;
      if (is_header(text)) continue;
    }
    const std::string where = csv_path + ":" + std::to_string(line_no);
    // The label is the last field, so a path may contain commas (quoted or not).
    const std::size_t comma = text.rfind(',');
    if (comma == std::string::npos) {
      throw DataError(where + ": expected \"path,label\", got \"" + text + "\"");
    }
    const std::string label_text = trim(text.substr(comma + 1));
    const long long label = parse_label(label_text);
    if (label < 0) {
      throw DataError(where + ": label \"" + label_text +
                      "\" is not a non-negative integer (expected \"path,label\")");
    }
    const std::string path = unquote(trim(text.substr(0, comma)));
    if (path.empty()) throw DataError(where + ": empty path (expected \"path,label\")");
    const fs::path file(path);
    files.push_back(LabelledFile{file.is_absolute() ? file.string() : (base / file).string(),
                                 static_cast<std::int64_t>(label)});
  }
  if (in.bad()) throw DataError(csv_path + ": read error");
  if (files.empty()) {
    throw DataError(csv_path + ": no samples (expected lines \"path,label\")");
  }
  return make_file_list_source(std::move(files), csv_path, "CSV manifest", options);
}

}  // namespace dl::data
