// The workspace template's dl.conf names every setting (so a new workspace documents them all):
// each option of the launch and train registries has a "# key = value" line, and those lines,
// uncommented, are a config file dl-launch accepts. A setting added to the registry without a
// line in the template fails here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "core/settings.h"
#include "support/build_paths.h"

namespace dl::test {
namespace {

const std::string kTemplateConf = std::string(dl::test::kTemplateSource) + "/dl.conf";

// Settings that cannot be a line of the workspace's own dl.conf; the file still mentions them.
const std::set<std::string> kNotInTheWorkspaceConf = {
    "workspace",     // the workspace holds this file: it comes from --workspace or DL_WORKSPACE
    "run-as-owner",  // the workspace's owner would choose to run the program as root
    "nvml-library",  // dl-launch, root in the image, loads it into its own process
    "probe-batch",   // dl-train's probe mode, run by the batch-size search, never a training run
};

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The keys of "key = value" lines, commented ("# key = value") or not.
std::set<std::string> keys_in(const std::string& text) {
  static const std::regex kLine(R"(^#? ?([a-z][a-z0-9-]*) =.*$)");
  std::set<std::string> keys;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kLine)) keys.insert(m[1]);
  }
  return keys;
}

TEST(TemplateConf, NamesEverySettingOfBothRegistries) {
  const std::string text = read_all(kTemplateConf);
  ASSERT_FALSE(text.empty()) << kTemplateConf << " cannot be read";
  const std::set<std::string> keys = keys_in(text);
  for (const auto* registry : {&settings::launch(), &settings::train()}) {
    for (const auto& option : registry->options()) {
      const std::string& key = option->long_name();
      if (kNotInTheWorkspaceConf.count(key)) {
        EXPECT_EQ(keys.count(key), 0u) << key << " cannot be set in the workspace's dl.conf";
        EXPECT_NE(text.find("\n# " + key + ": "), std::string::npos)
            << kTemplateConf << " has no '# " << key << ": why not here' line";
        continue;
      }
      EXPECT_EQ(keys.count(key), 1u) << kTemplateConf << " has no '# " << key << " = ...' line";
    }
  }
}

TEST(TemplateConf, EveryLineUncommentedIsAValidConfigFile) {
  std::istringstream in(read_all(kTemplateConf));
  std::string uncommented, line;
  int settings_lines = 0;
  static const std::regex kCommented(R"(^# ([a-z][a-z0-9-]*) =(.*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kCommented)) {
      line = std::string(m[1]) + " =" + std::string(m[2]);
      ++settings_lines;
    }
    uncommented += line + "\n";
  }
  EXPECT_GT(settings_lines, 20);
  char path[] = "/tmp/dl-template-conf-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, uncommented.data(), uncommented.size()),
            static_cast<ssize_t>(uncommented.size()));
  close(fd);
  settings::Layers layers;
  try {
    EXPECT_TRUE(layers.add_config_file(path, true));
  } catch (const UserError& e) {
    ADD_FAILURE() << "the template's settings, uncommented: " << e.what();
  }
  unlink(path);
}

}  // namespace
}  // namespace dl::test
