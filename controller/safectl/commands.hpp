// safectl's subcommands. Each takes the arguments after its own name and returns the exit code.
#pragma once

#include <cstddef>
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
int doctor(const std::vector<std::string>& args);

// $SAFE_CONTROLLER_URL, else the active safed as etcd has it (controller.ha), else
// http://<controller.listen> from the safe.yaml at `config_path`.
std::string default_controller_url(const std::string& config_path);
// curl's write callback for safectl's requests: appends to the std::string at `out`, at most 64 MiB.
size_t collect_http_body(char* data, size_t size, size_t n, void* out);

}  // namespace safe::ctl
