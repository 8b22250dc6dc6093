// libFuzzer target for every parser that reads user or admin input: --safe-* option values, a
// job's SPANK environment, Slurm TRES/gres strings, the AdminComment record, safe.yaml, and the
// REST bridge's workload spec (JSON) and JWTs.
// Besides "no crash, no sanitizer report" it checks round-trip properties that must hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/gpu_request.hpp"
#include "common/job_metadata.hpp"
#include "common/safe_options.hpp"
#include "kube-bridge/authenticator.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void fuzz_option(std::string_view input) {
  for (const auto& spec : safe::option_specs()) {
    safe::SafeOptions options;
    if (safe::parse_option(options, spec.id, input)) {
      require(!options.any());
      continue;
    }
    // Accepted values print canonically and read back to the same value.
    safe::SafeOptions again;
    require(!safe::parse_option(again, spec.id, options.value_text(spec.id)));
    require(again == options);
  }
}

void fuzz_spank_env(std::string_view input) {
  std::vector<std::string> owned;
  std::size_t start = 0;
  while (start <= input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    owned.emplace_back("_SLURM_SPANK_OPTION_safe_" + std::string(input.substr(start, end - start)));
    start = end + 1;
  }
  std::vector<std::string_view> env(owned.begin(), owned.end());
  safe::parse_spank_job_env(env);
}

void fuzz_tres(std::string_view input) {
  auto n = safe::gpus_in_tres(input);
  if (n) require(*n >= 0);
  safe::GpuRequest request;
  request.tres_per_node = std::string(input);
  request.min_nodes = 4;
  safe::GpuCount count = safe::count_requested_gpus(request);
  require(count.gpus >= 0);
}

void fuzz_metadata(std::string_view input) {
  auto parsed = safe::parse_job_metadata(input);
  if (parsed) {
    std::string text = safe::format_job_metadata(*parsed);
    require(safe::parse_job_metadata(text).has_value());
  }
  safe::merge_admin_comment(input, "safe: retries=0/1");
}

void fuzz_config(std::string_view input) {
  safe::ConfigResult r = safe::parse_config(input, "fuzz.yaml");
  require(r.ok() == r.config.has_value());
  for (const auto& e : r.errors) require(!e.message.empty());
}

void fuzz_workload_spec(std::string_view input) {
  safe::bridge::SpecParse p = safe::bridge::parse_workload_spec(input);
  require(p.spec.has_value() == p.errors.empty());
  if (p.spec) require(!p.spec->name.empty() && p.spec->nodes >= 1);
}

void fuzz_jwt(std::string_view input) {
  // Without the key nothing may verify, whatever the token claims.
  auto check = safe::bridge::verify_slurm_jwt(input, "0123456789abcdef0123456789abcdef", 1800000000);
  require(!check.user.has_value() && !check.error.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0: fuzz_option(input); break;
    case 1: fuzz_spank_env(input); break;
    case 2: fuzz_tres(input); break;
    case 3: fuzz_metadata(input); break;
    case 4: fuzz_config(input); break;
    case 5: fuzz_workload_spec(input); break;
    case 6: fuzz_jwt(input); break;
  }
  return 0;
}
