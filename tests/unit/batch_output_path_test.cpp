// The batch job's output file as slurmstepd names it, pattern by pattern, for both of Slurm's
// expansion rules (slurmd's fname.c up to 24.05, expand_stdio_fields from 24.11). The expected
// names follow Slurm's code (src/slurmd/common/fname.c, src/common/print_fields.c).
#include "common/batch_output_path.hpp"

#include <gtest/gtest.h>

namespace safe {
namespace {

BatchOutputContext job() {
  BatchOutputContext c;
  c.job_id = 7;
  c.job_name = "train";
  c.user_name = "alice";
  c.batch_node = "n1";
  c.batch_host_short = "host";
  c.work_dir = "/work";
  c.restart_count = 2;
  return c;
}

BatchOutputContext array_task() {
  BatchOutputContext c = job();
  c.job_id = 12;
  c.array_job_id = 10;
  c.array_task_id = 4;
  return c;
}

struct Case {
  const char* name;
  const char* pattern;
  BatchOutputContext context;
  const char* expected;
};

class SlurmdFname : public ::testing::TestWithParam<Case> {};
TEST_P(SlurmdFname, NamesTheFileAsSlurmd2205Does) {
  EXPECT_EQ(GetParam().expected, batch_output_path(GetParam().pattern, GetParam().context, OutputPatternDialect::slurmd_fname));
}
INSTANTIATE_TEST_SUITE_P(
    Patterns, SlurmdFname,
    ::testing::Values(
        Case{"Default", "", job(), "/work/slurm-7.out"},
        Case{"DefaultForAnArrayTask", "", array_task(), "/work/slurm-10_4.out"},
        Case{"RelativeIsUnderTheWorkingDirectory", "%j.out", job(), "/work/7.out"},
        Case{"EveryPattern", "/o/%u-%x-%N-%n-%t-%s-%J-%A-%a.txt", job(), "/o/alice-train-host-0-0-batch-7-7-4294967294.txt"},
        Case{"ArrayPatterns", "/o/%A_%a-%j", array_task(), "/o/10_4-12"},
        Case{"Percent", "/o/%%j", job(), "/o/%j"},
        Case{"Width", "/o/%3a-%10j-%12j", array_task(), "/o/004-0000000012-0000000012"},
        Case{"UnknownPatternWithAWidthKeepsItsLastDigit", "/o/%3z-%10z", job(), "/o/3z-0z"},
        Case{"UnknownPatternIsKept", "/o/%b%r", job(), "/o/%b%r"},
        Case{"LonePercentAtTheEnd", "/o/a%", job(), "/o/a%"},
        Case{"WidthAtTheEnd", "/o/a%15", job(), "/o/a5"},
        Case{"BackslashTurnsExpansionOff", "/o/\\%j\\\\x", job(), "/o/%j\\x"},
        Case{"EscapedRelativeNameLacksTheSlash", "o\\%j", job(), "/worko%j"},
        Case{"SingleTaskOutputOfAnotherTask", "3", job(), ""},
        Case{"SingleTaskOutputOfTaskZero", "0", job(), "/work/0"}),
    [](const auto& info) { return std::string(info.param.name); });

class StdioFields : public ::testing::TestWithParam<Case> {};
TEST_P(StdioFields, NamesTheFileAsSlurm2411Does) {
  EXPECT_EQ(GetParam().expected, batch_output_path(GetParam().pattern, GetParam().context, OutputPatternDialect::stdio_fields));
}
INSTANTIATE_TEST_SUITE_P(
    Patterns, StdioFields,
    ::testing::Values(
        Case{"Default", "", job(), "/work/slurm-7.out"},
        Case{"EveryPattern", "/o/%u-%x-%N-%n-%t-%s-%J-%A-%a-%r.txt", job(),
             "/o/alice-train-n1-0-0-batch-7-7-4294967294-2.txt"},
        Case{"ArrayTaskModuloTen", "/o/%A_%b", array_task(), "/o/10_4"},
        Case{"Width", "/o/%3a-%12j", array_task(), "/o/004-0000000012"},
        Case{"UnknownPatternIsKeptWithItsWidth", "/o/%3z-%S", job(), "/o/%3z-%S"},
        Case{"LonePercentAtTheEndIsDropped", "/o/a%", job(), "/o/a"},
        Case{"BackslashTurnsExpansionOff", "/o/\\%j\\\\x", job(), "/o/%jx"},
        Case{"EscapedRelativeName", "o\\%j", job(), "/work/o%j"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace safe
