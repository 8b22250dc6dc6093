// --safe-* option parsing and the SPANK environment format, table-driven.
#include <gtest/gtest.h>

#include <csignal>

#include "common/safe_options.hpp"

namespace safe {
namespace {

struct OptionCase {
  const char* name;
  SafeOption id;
  const char* value;
  const char* canonical;  // nullptr: must be rejected
  const char* message;    // the message expected on rejection
};

class OptionTest : public ::testing::TestWithParam<OptionCase> {};

TEST_P(OptionTest, ParsesOrRejectsWithMessage) {
  const OptionCase& c = GetParam();
  SafeOptions options;
  Status parsed = parse_option(options, c.id, c.value);
  if (c.canonical) {
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(options.value_text(c.id), c.canonical);
    // The canonical text reads back to the same value.
    SafeOptions again;
    ASSERT_TRUE(parse_option(again, c.id, options.value_text(c.id)).ok());
    EXPECT_EQ(again, options);
  } else {
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error(), c.message);
    EXPECT_FALSE(options.any()) << "a rejected value must not be stored";
  }
}

const OptionCase kOptionCases[] = {
    {"workspace", SafeOption::workspace, "ml", "ml", nullptr},
    {"workspace_dash", SafeOption::workspace, "team-a_1", "team-a_1", nullptr},
    {"workspace_space", SafeOption::workspace, "my ws", nullptr,
     "safe: --safe-workspace expects a workspace name (1-64 letters, digits, '_' or '-'), got 'my ws'"},
    {"workspace_empty", SafeOption::workspace, "", nullptr,
     "safe: --safe-workspace expects a workspace name (1-64 letters, digits, '_' or '-'), got ''"},
    {"retries", SafeOption::retries, "3", "3", nullptr},
    {"retries_zero", SafeOption::retries, "0", "0", nullptr},
    {"retries_max", SafeOption::retries, "50", "50", nullptr},
    {"retries_text", SafeOption::retries, "x", nullptr, "safe: --safe-retries expects an integer 0..50, got 'x'"},
    {"retries_negative", SafeOption::retries, "-1", nullptr, "safe: --safe-retries expects an integer 0..50, got '-1'"},
    {"retries_too_many", SafeOption::retries, "51", nullptr, "safe: --safe-retries expects an integer 0..50, got '51'"},
    {"retries_trailing", SafeOption::retries, "3x", nullptr, "safe: --safe-retries expects an integer 0..50, got '3x'"},
    {"retries_huge", SafeOption::retries, "99999999999999999999", nullptr,
     "safe: --safe-retries expects an integer 0..50, got '99999999999999999999'"},
    {"ckpt_dir", SafeOption::ckpt_dir, "/ckpt/run1", "/ckpt/run1", nullptr},
    {"ckpt_dir_relative", SafeOption::ckpt_dir, "ckpt/run1", nullptr,
     "safe: --safe-ckpt-dir expects an absolute path (starting with /), got 'ckpt/run1'"},
    {"ckpt_dir_dotdot", SafeOption::ckpt_dir, "/ckpt/../etc", nullptr,
     "safe: --safe-ckpt-dir expects a path without '..', got '/ckpt/../etc'"},
    {"ckpt_dir_dotdot_end", SafeOption::ckpt_dir, "/ckpt/..", nullptr,
     "safe: --safe-ckpt-dir expects a path without '..', got '/ckpt/..'"},
    {"ckpt_dir_dots_in_name", SafeOption::ckpt_dir, "/ckpt/run..1", "/ckpt/run..1", nullptr},
    {"ckpt_dir_space", SafeOption::ckpt_dir, "/ckpt/my run", nullptr,
     "safe: --safe-ckpt-dir expects a path without spaces or control characters, got '/ckpt/my run'"},
    {"ckpt_dir_newline", SafeOption::ckpt_dir, "/ckpt/a\nb", nullptr,
     "safe: --safe-ckpt-dir expects a path without spaces or control characters, got '/ckpt/a?b'"},
    {"signal_with_lead", SafeOption::ckpt_signal, "USR1@120", "USR1@120", nullptr},
    {"signal_sig_prefix", SafeOption::ckpt_signal, "SIGUSR2@60", "USR2@60", nullptr},
    {"signal_number", SafeOption::ckpt_signal, "15@30", "TERM@30", nullptr},
    {"signal_no_lead", SafeOption::ckpt_signal, "USR1", "USR1", nullptr},
    {"signal_kill", SafeOption::ckpt_signal, "KILL@10", nullptr,
     "safe: --safe-ckpt-signal expects SIG[@SECS] with a catchable signal (USR1, USR2, TERM, INT, HUP, ...) and SECS "
     "0..65535, got 'KILL@10'"},
    {"signal_lead_empty", SafeOption::ckpt_signal, "USR1@", nullptr,
     "safe: --safe-ckpt-signal expects SIG[@SECS] with a catchable signal (USR1, USR2, TERM, INT, HUP, ...) and SECS "
     "0..65535, got 'USR1@'"},
    {"signal_lead_range", SafeOption::ckpt_signal, "USR1@70000", nullptr,
     "safe: --safe-ckpt-signal expects SIG[@SECS] with a catchable signal (USR1, USR2, TERM, INT, HUP, ...) and SECS "
     "0..65535, got 'USR1@70000'"},
    {"signal_lowercase", SafeOption::ckpt_signal, "usr1", nullptr,
     "safe: --safe-ckpt-signal expects SIG[@SECS] with a catchable signal (USR1, USR2, TERM, INT, HUP, ...) and SECS "
     "0..65535, got 'usr1'"},
    {"health_strict", SafeOption::health, "strict", "strict", nullptr},
    {"health_off", SafeOption::health, "off", "off", nullptr},
    {"health_bad", SafeOption::health, "paranoid", nullptr,
     "safe: --safe-health expects strict, standard or off, got 'paranoid'"},
    {"hang_timeout", SafeOption::hang_timeout, "1800", "1800", nullptr},
    {"hang_timeout_off", SafeOption::hang_timeout, "0", "0", nullptr},
    {"hang_timeout_range", SafeOption::hang_timeout, "604801", nullptr,
     "safe: --safe-hang-timeout expects seconds 0..604800, got '604801'"},
    {"min_nodes", SafeOption::min_nodes, "2", "2", nullptr},
    {"min_nodes_zero", SafeOption::min_nodes, "0", nullptr,
     "safe: --safe-min-nodes expects a node count 1..100000, got '0'"},
    {"node_multiple", SafeOption::node_multiple, "4", "4", nullptr},
    {"node_multiple_bad", SafeOption::node_multiple, "2x", nullptr,
     "safe: --safe-node-multiple expects a node count 1..100000, got '2x'"},
};

INSTANTIATE_TEST_SUITE_P(Options, OptionTest, ::testing::ValuesIn(kOptionCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SafeOptions, TableIsComplete) {
  ASSERT_EQ(option_specs().size(), 8u);
  EXPECT_EQ(std::string(option_spec(SafeOption::ckpt_signal).name), "safe-ckpt-signal");
  EXPECT_EQ(std::string(option_spec(SafeOption::hang_timeout).env), "SAFE_HANG_TIMEOUT");
}

TEST(SafeOptions, SpankEnvNamesFollowSlurm) {
  EXPECT_EQ(spank_env_name(SafeOption::workspace), "_SLURM_SPANK_OPTION_safe_safe_workspace");
  EXPECT_EQ(spank_env_name(SafeOption::ckpt_signal), "_SLURM_SPANK_OPTION_safe_safe_ckpt_signal");
}

TEST(SafeOptions, ParsesSpankJobEnvAndIgnoresOthers) {
  std::vector<std::string_view> env = {
      "_SLURM_SPANK_OPTION_safe_safe_workspace=ml",
      "_SLURM_SPANK_OPTION_safe_safe_retries=3",
      "_SLURM_SPANK_OPTION_pyxis_container_image=ubuntu",
      "SOMETHING=else",
      "_SLURM_SPANK_OPTION_safe_safe_ckpt_signal=USR2@30",
      "_SLURM_SPANK_OPTION_safe_safe_unknown=1",
      "_SLURM_SPANK_OPTION_safe_safe_health",
  };
  SpankEnvOptions parsed = parse_spank_job_env(env);
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_EQ(parsed.options.workspace, "ml");
  EXPECT_EQ(parsed.options.retries, 3);
  ASSERT_TRUE(parsed.options.ckpt_signal.has_value());
  EXPECT_EQ(parsed.options.ckpt_signal->signo, SIGUSR2);
  EXPECT_EQ(parsed.options.ckpt_signal->seconds, 30);
  EXPECT_FALSE(parsed.options.health.has_value());
}

TEST(SafeOptions, SpankJobEnvErrorsCarryTheUserMessage) {
  std::vector<std::string_view> env = {"_SLURM_SPANK_OPTION_safe_safe_retries=(null)"};
  SpankEnvOptions parsed = parse_spank_job_env(env);
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_EQ(parsed.errors[0], "safe: --safe-retries expects an integer 0..50, got '(null)'");
}

}  // namespace
}  // namespace safe
