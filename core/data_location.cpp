// Data location rules shared by the launcher and the trainer.
#include "core/data_location.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>

namespace dl {

bool holds_data_set(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || name.rfind("README", 0) == 0) continue;
    found = true;
    break;
  }
  closedir(d);
  return found;
}

std::string default_data_dir() {
  const char* env = std::getenv("DL_DEFAULT_DATA");
  for (const std::string& dir :
       {std::string(env != nullptr ? env : ""), std::string("/opt/dl/data/fashion-mnist"),
        std::string("/usr/share/datasets/fashion-mnist")}) {
    struct stat st {};
    if (!dir.empty() && stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  }
  return {};
}

}  // namespace dl
