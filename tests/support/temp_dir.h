// A fresh scratch directory for one test, removed with everything in it when the object goes.
#pragma once

#include <filesystem>
#include <string>

namespace dl::test {

class TempDir {
 public:
  TempDir();  // throws std::runtime_error when no directory can be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::filesystem::path fs_path() const { return path_; }
  // "<path>/<name>".
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }

 private:
  std::string path_;
};

}  // namespace dl::test
