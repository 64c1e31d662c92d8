// Slurm's hostlist syntax, as SLURM_JOB_NODELIST holds it: "node[01-04,07],gpu-a1,x[1-2]-ib".
// Pure: the master of a Slurm run is the first host of the list.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dl {

// The hosts of a Slurm hostlist, in order: comma-separated items, each a name with any number of
// bracketed ranges ("a[1-3,7]", "rack[1-2]-n[01-02]": every combination, the first range
// outermost). A range keeps the zero padding of its first bound ("01-10" gives 01 ... 10).
// nullopt for anything malformed (unbalanced brackets, an empty item, a range from high to low,
// more than kMaxHosts hosts).
std::optional<std::vector<std::string>> expand_hostlist(const std::string& list);

// The first host of the list without expanding the rest; nullopt as above.
std::optional<std::string> first_host(const std::string& list);

// Slurm's per-node task counts ("2(x3),1" is 2,2,2,1), as SLURM_TASKS_PER_NODE holds them.
std::optional<std::vector<int>> expand_tasks_per_node(const std::string& counts);

constexpr std::size_t kMaxHosts = 1'000'000;

}  // namespace dl
