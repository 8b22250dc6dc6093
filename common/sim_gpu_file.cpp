#include "common/sim_gpu_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/atomic_file.hpp"

namespace safe {

std::optional<SimFault> sim_fault_from_string(std::string_view name) {
  for (SimFault f : {SimFault::ecc, SimFault::lost, SimFault::hot, SimFault::xgmi, SimFault::pcie, SimFault::replays, SimFault::hang,
                     SimFault::clear})
    if (to_string(f) == name) return f;
  return std::nullopt;
}

std::string_view to_string(SimFault fault) {
  switch (fault) {
    case SimFault::ecc: return "ecc";
    case SimFault::lost: return "lost";
    case SimFault::hot: return "hot";
    case SimFault::xgmi: return "xgmi";
    case SimFault::pcie: return "pcie";
    case SimFault::replays: return "replays";
    case SimFault::hang: return "hang";
    case SimFault::clear: return "clear";
  }
  return "?";
}

Status apply_sim_fault(GpuSnapshot& s, int gpu, SimFault fault) {
  if (gpu < 0 && (fault == SimFault::clear || fault == SimFault::hang)) {
    if (fault == SimFault::hang) {
      s.hang = true;
      return ok_status();
    }
    s.hang = false;
    for (auto& g : s.gpus) g = healthy_sim_gpu(g.index);
    return ok_status();
  }
  if (fault == SimFault::hang) {
    s.hang = true;  // a hung library hangs for every GPU
    return ok_status();
  }
  GpuDevice* target = nullptr;
  for (auto& g : s.gpus)
    if (g.index == gpu) target = &g;
  if (!target)
    return Error{"no GPU " + std::to_string(gpu) + " on this node (it has " + std::to_string(s.gpus.size()) + ")"};
  GpuDevice& g = *target;
  switch (fault) {
    case SimFault::ecc: g.ecc_uncorrectable += 2; break;
    case SimFault::lost:
      g.responsive = false;
      g.error = "GPU is lost (simulated)";
      break;
    case SimFault::hot: g.temperature_c = (g.slowdown_c > 0 ? g.slowdown_c : 100) + 3; break;
    case SimFault::xgmi:
      g.xgmi_links_inactive = g.xgmi_links > 0 ? 1 : 0;
      g.xgmi_errors = 1;
      break;
    case SimFault::pcie:
      g.link_width = g.link_max_width > 1 ? g.link_max_width / 2 : 1;
      break;
    case SimFault::replays: g.pcie_replay = 5000; break;  // above the default 1000: a warning, not critical
    case SimFault::clear: g = healthy_sim_gpu(g.index); break;
    case SimFault::hang: break;
  }
  return ok_status();
}

std::string sim_file_path(std::string_view sim_dir, std::string_view node) {
  std::string dir(sim_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + std::string(node) + ".json";
}

Result<GpuSnapshot> load_sim_file(const std::string& path, int default_gpus) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return healthy_sim_snapshot(default_gpus);
    return Error{path + ": " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto snapshot = gpu_snapshot_from_json(text.str());
  if (!snapshot) return Error{path + ": " + snapshot.error()};
  snapshot->backend = "sim";
  return snapshot;
}

Status save_sim_file(const std::string& path, const GpuSnapshot& snapshot) {
  std::string dir = path.substr(0, path.find_last_of('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0755);
  return write_file_atomically(path, to_json(snapshot));
}

}  // namespace safe
