// safectl's subcommands. Each takes the arguments after its own name and returns the exit code.
#pragma once

#include <string>
#include <vector>

namespace safe::ctl {

int config_check(const std::vector<std::string>& args);
int inject(const std::vector<std::string>& args);
int render_slurm(const std::vector<std::string>& args);
int status(const std::vector<std::string>& args);
int jobs(const std::vector<std::string>& args);
int job(const std::vector<std::string>& args);
int node_release(const std::vector<std::string>& args);

}  // namespace safe::ctl
