// Which shard files a `--data` value names, as WebDataset users write them: brace notation
// (`train-{000000..000146}.tar`, `{a,b}` alternatives, several braces multiply), a directory of
// `.tar` files (in name order), a single `.tar` file, or a list file (`.shards`: one shard a
// line, relative to the list's folder; `#` comments and blank lines skipped). Local paths,
// file:// URLs, and http(s):// and s3:// URLs (remote_store.h): braces over a URL, or a list
// at a URL, whose relative entries are relative to it. A remote folder cannot be listed.
#pragma once

#include <string>
#include <vector>

namespace dl::data {

// Expands the braces of `pattern`: `{0..3}` gives 0 1 2 3, `{08..10}` keeps the width of its
// ends (08 09 10), `{x,y}` gives x and y. At most `limit` names; throws std::invalid_argument,
// one line naming the pattern, for an unbalanced brace, an empty or reversed range, or more.
std::vector<std::string> expand_braces(const std::string& pattern, std::size_t limit = 1000000);

// Whether `location` reads as shards: braces, a .tar file, a .shards list, or a
// directory that holds .tar files and no folders besides train/ and val/.
bool names_shards(const std::string& location);

// The shard files `location` names, in order, each checked to be a regular file. Throws
// MissingData for a local shard that is not there and DataError for anything else unusable (a
// list without shards, a directory without .tar files, local and remote shards mixed), one line
// naming it. Remote shards are checked when they are read.
std::vector<std::string> shard_paths(const std::string& location);

}  // namespace dl::data
