// `dl-launch init DIR`: a new workspace, copied from the workspace template (dl.conf with every
// setting commented, data/README.md, the Python examples). Existing files are never overwritten.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dl {

// Where the template may be, in the order searched: $DL_TEMPLATE_DIR (when set, the only one),
// <exe dir>/../share/dl/workspace_template (an install), /opt/dl/workspace_template (the image),
// the source tree's workspace_template (a build tree).
std::vector<std::string> template_candidates(const char* env_dir, const std::string& self_dir);

// The first candidate that holds a dl.conf. Throws UserError 66 naming every place looked in.
std::string find_template(const std::vector<std::string>& candidates);

struct InitResult {
  std::vector<std::string> created;  // paths relative to the workspace, files and directories
  std::vector<std::string> skipped;  // files that existed and were left alone
};

// Copies `template_dir` into `dir` (created with its parents). As root on a directory that
// belongs to another user, what is created is given to that user. Throws UserError 73 when a
// directory or file cannot be created.
InitResult init_workspace(const std::string& template_dir, const std::string& dir);

// The subcommand: `args` are what follows "init". Prints what was done and what to run next.
int init_main(const std::vector<std::string>& args, std::ostream& out);

}  // namespace dl
