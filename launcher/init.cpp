// The init subcommand: find the template, copy it file by file, skip what exists.
#include "launcher/init.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "core/act_as.h"
#include "core/errors.h"
#include "core/run_as.h"
#include "launcher/command.h"

namespace fs = std::filesystem;

namespace dl {
namespace {

bool has_template(const std::string& dir) {
  struct stat st {};
  return stat((dir + "/dl.conf").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Compiled bytecode and editor leftovers are not part of the template.
bool skipped_name(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "__pycache__" || p.extension() == ".pyc" || name.empty() || name.back() == '~';
}

[[noreturn]] void cannot_create(const std::string& path, const std::error_code& ec) {
  throw UserError(exit_code::kCantWrite,
                  "init: cannot create " + path + ": " + ec.message() +
                      "; expected a directory this user may write (or a writable parent)");
}

// The owner of `dir` or, when it does not exist yet, of its nearest existing parent: as root,
// what init creates is theirs (the container writing into the host user's bind mount).
std::optional<Identity> owner_for(const fs::path& dir) {
  fs::path p = dir;
  while (!p.empty() && !fs::exists(p)) p = p.parent_path();
  return workspace_owner(p.empty() ? "." : p.string(), true);
}

std::string usage() {
  return "Usage: dl-launch init DIR\n\n"
         "Creates DIR (and its parents) as a workspace: dl.conf with every setting commented,\n"
         "data/README.md, python/train.py (the tutorial's trainer, reading dl-launch's plan) and\n"
         "python/export_torchscript.py (a Python model for dl-train). Existing files are kept.\n"
         "The template is looked for in $DL_TEMPLATE_DIR, <dl-launch's dir>/../share/dl/\n"
         "workspace_template, /opt/dl/workspace_template and the source tree.\n";
}

}  // namespace

std::vector<std::string> template_candidates(const char* env_dir, const std::string& self_dir) {
  if (env_dir != nullptr && *env_dir != '\0') return {env_dir};
  std::vector<std::string> c = {self_dir + "/../share/dl/workspace_template",
                                "/opt/dl/workspace_template"};
#ifdef DL_SOURCE_TEMPLATE_DIR
  c.emplace_back(DL_SOURCE_TEMPLATE_DIR);
#endif
  return c;
}

std::string find_template(const std::vector<std::string>& candidates) {
  std::string looked;
  for (const auto& dir : candidates) {
    if (has_template(dir)) return fs::weakly_canonical(dir).string();
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  throw UserError(exit_code::kMissing,
                  "init: no workspace template (a directory with dl.conf) in " + looked +
                      "; set DL_TEMPLATE_DIR to the workspace_template directory");
}

InitResult init_workspace(const std::string& template_dir, const std::string& dir) {
  const fs::path root = fs::absolute(dir).lexically_normal();
  const std::optional<Identity> owner = owner_for(root);
  // Everything below is made with the owner's credentials: a link they planted leads nowhere they
  // could not write themselves, and what is made is theirs without a chown.
  const ActAs as_owner(owner);
  InitResult result;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) {
    cannot_create(root.string(), ec ? ec : std::make_error_code(std::errc::not_a_directory));
  }
  if (access(root.c_str(), W_OK | X_OK) != 0) {
    cannot_create(root.string(), std::error_code(errno, std::generic_category()));
  }

  auto walk = fs::recursive_directory_iterator(template_dir, ec);
  if (ec) {
    throw UserError(exit_code::kMissing,
                    "init: cannot read the template " + template_dir + ": " + ec.message());
  }
  for (auto entry = walk; entry != fs::recursive_directory_iterator(); entry.increment(ec)) {
    if (ec) {
      throw UserError(exit_code::kMissing,
                      "init: cannot read the template " + template_dir + ": " + ec.message());
    }
    const fs::path from = entry->path();
    if (skipped_name(from)) {
      if (entry->is_directory()) entry.disable_recursion_pending();
      continue;
    }
    const fs::path rel = from.lexically_relative(template_dir);
    const fs::path to = root / rel;
    if (entry->is_directory()) {
      // A directory of the user's own is filled in; a link in its place is not followed.
      if (fs::symlink_status(to).type() == fs::file_type::directory) continue;
      if (fs::symlink_status(to).type() != fs::file_type::not_found) {
        // The user's file of the same name stays; what the template has under it is left out.
        result.skipped.push_back(rel.string() + "/");
        entry.disable_recursion_pending();
        continue;
      }
      if (!fs::create_directory(to, ec) || ec) cannot_create(to.string(), ec);
      result.created.push_back(rel.string() + "/");
      continue;
    }
    // symlink_status: a dangling link is something too, and is not followed or replaced.
    if (fs::symlink_status(to).type() != fs::file_type::not_found) {
      result.skipped.push_back(rel.string());
      continue;
    }
    if (!fs::copy_file(from, to, fs::copy_options::none, ec) || ec) cannot_create(to.string(), ec);
    // An installed template may be read-only; the user's copy is theirs to edit.
    fs::permissions(to, fs::perms::owner_write, fs::perm_options::add, ec);
    result.created.push_back(rel.string());
  }
  std::sort(result.created.begin(), result.created.end());
  std::sort(result.skipped.begin(), result.skipped.end());
  return result;
}

int init_main(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage();
    return exit_code::kOk;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    throw UserError(exit_code::kUsage,
                    "init: expected one directory, as in: dl-launch init ~/my-project");
  }
  const std::string tmpl =
      find_template(template_candidates(std::getenv("DL_TEMPLATE_DIR"), self_directory()));
  const InitResult r = init_workspace(tmpl, args[0]);
  const std::string dir = fs::absolute(args[0]).lexically_normal().string();
  out << "workspace " << dir << " (from " << tmpl << ")\n";
  for (const auto& c : r.created) out << "  created  " << c << "\n";
  for (const auto& s : r.skipped) out << "  skipped  " << s << "  (exists; left as it is)\n";
  out << "next:\n"
      << "  dl-launch --workspace " << dir << "\n"
      << "      trains dl-train's default (Fashion-MNIST, or what data/ holds; see dl.conf)\n"
      << "  dl-launch --workspace " << dir << " -- python3 python/train.py\n"
      << "      the same with the Python trainer, on the plan dl-launch makes\n";
  return exit_code::kOk;
}

}  // namespace dl
