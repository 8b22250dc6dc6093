// libFuzzer target for every parser that reads user or admin input: --safe-* option values, a
// job's SPANK environment, Slurm TRES/gres strings, the AdminComment record, safe.yaml, the REST
// bridge's workload spec (JSON) and JWTs, -L license strings, -o output patterns, bytes bound for
// JSON, and the cluster shape safed publishes.
// Besides "no crash, no sanitizer report" it checks round-trip properties that must hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <jansson.h>

#include "common/admission.hpp"
#include "common/batch_output_path.hpp"
#include "common/cluster_shape.hpp"
#include "common/config.hpp"
#include "common/gpu_request.hpp"
#include "common/json_utf8.hpp"
#include "common/job_metadata.hpp"
#include "common/safe_options.hpp"
#include "common/authenticator.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void fuzz_option(std::string_view input) {
  for (const auto& spec : safe::option_specs()) {
    safe::SafeOptions options;
    if (!safe::parse_option(options, spec.id, input)) {
      require(!options.any());
      continue;
    }
    // Accepted values print canonically and read back to the same value.
    safe::SafeOptions again;
    require(safe::parse_option(again, spec.id, options.value_text(spec.id)).ok());
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
  request.exclusive = !input.empty() && input[0] == 'x';
  safe::NodeCapacity capacity{true, 8, 2, 16, false};
  safe::GpuCharge charge = safe::charge_gpus(request, capacity);
  require(charge.gpus >= 0);
  require(!request.exclusive || !charge.error.empty() || charge.gpus >= 8 * 4);
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
  auto check = safe::verify_slurm_jwt(input, "0123456789abcdef0123456789abcdef", 1800000000);
  require(!check.user.has_value() && !check.error.empty());
}

// A user's -L string: no name SaFE extracts holds a separator, so none hides a safe_ws_ license.
void fuzz_licenses(std::string_view input) {
  for (const auto& name : safe::license_names(input)) require(name.find_first_of(",;|:=") == std::string::npos);
}

void fuzz_output_path(std::string_view input) {
  safe::BatchOutputContext c;
  c.job_id = 7;
  c.job_name = "j";
  c.user_name = "u";
  c.work_dir = "/w";
  for (auto dialect : {safe::OutputPatternDialect::slurmd_fname, safe::OutputPatternDialect::stdio_fields}) {
    std::string path = safe::batch_output_path(input, c, dialect);
    require(path.empty() || path[0] == '/');
  }
}

void fuzz_utf8(std::string_view input) {
  std::string fixed = safe::valid_utf8(input);
  json_t* s = json_stringn(fixed.data(), fixed.size());
  require(s != nullptr);
  json_decref(s);
  require(safe::valid_utf8(fixed) == fixed);
}

void fuzz_cluster_shape(std::string_view input) {
  if (auto shape = safe::parse_cluster_shape(input)) {
    auto again = safe::parse_cluster_shape(safe::to_json(*shape));
    require(again && again->partitions.size() == shape->partitions.size());
  }
  require(safe::gpus_in_node_gres(input) >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Selectors below 128 pick what they always picked, so the seeds keep their meaning.
  if (data[0] >= 128) {
    switch ((data[0] - 128) % 4) {
      case 0: fuzz_licenses(input); break;
      case 1: fuzz_output_path(input); break;
      case 2: fuzz_utf8(input); break;
      case 3: fuzz_cluster_shape(input); break;
    }
    return 0;
  }
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
