// The shared main() of safe-prolog and safe-epilog: catch everything, bound everything, exit.
#pragma once

namespace safe {

enum class GateStage { prolog, epilog };
int gate_program_main(GateStage stage, int argc, char** argv, char** envp);

}  // namespace safe
