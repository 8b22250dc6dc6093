// Slurm host lists ("n[1-3,7],gpu05") as plain name lists, without libslurm, so the controller's
// core and its tests need no Slurm.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace safe {

// "n[1-3,07]" -> n1 n2 n3 n07; zero padding of ranges is kept ("n[01-02]" -> n01 n02).
// Malformed text yields the names that could be read.
std::vector<std::string> expand_hostlist(std::string_view list);

// Comma-separated, in the given order, without duplicates: Slurm accepts it everywhere.
std::string join_hostlist(const std::vector<std::string>& names);

}  // namespace safe
