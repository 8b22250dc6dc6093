// safe-epilog: Slurm Epilog; post-job check, stray cleanup, evidence. See docs/health.md.
#include <cstdio>
#include <cstdlib>

#include "prolog/program_main.hpp"

int main(int argc, char** argv, char** envp) {
  int code = safe::gate_program_main(safe::GateStage::epilog, argc, argv, envp);
  std::fflush(nullptr);
  std::_Exit(code);
}
