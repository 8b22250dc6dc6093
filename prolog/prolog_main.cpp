// safe-prolog: Slurm Prolog; gates the job's GPUs before it starts. See docs/health.md.
#include <cstdio>
#include <cstdlib>

#include "prolog/program_main.hpp"

int main(int argc, char** argv, char** envp) {
  int code = safe::gate_program_main(safe::GateStage::prolog, argc, argv, envp);
  std::fflush(nullptr);
  std::_Exit(code);
}
