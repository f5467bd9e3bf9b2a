// A PTX kernel as the engine runs it: every warp executes its own PTX (machine.hpp) and what
// synchronises becomes the engine's ops (sim/op.hpp), so the mbarrier rules, the hang explanation
// and the reports are the ones scenarios get. Barriers are the shared-memory words the kernel
// initialises, numbered as they appear; sites are the module's instructions.
#pragma once

#include <memory>
#include <string>

#include "model/arch.hpp"
#include "sim/program.hpp"
#include "verify/ptx/ast.hpp"
#include "verify/ptx/launch.hpp"

namespace pipesim::ptx {

// The engine's kernel for `module` under a resolved `launch` (resolve_launch): the launch shape,
// occupancy, one site per instruction of the module (its PTX position and, from `.loc`, its own
// source position), and the program. Throws PtxError for an instruction the interpreter does not
// support and LaunchError for a launch that cannot run. `use`: where each run of the kernel notes what
// it used (run_use.hpp), reset when a run starts and complete when it has ended.
class RunUse;
sim::Kernel make_kernel(std::shared_ptr<const Module> module, const Launch& launch, std::shared_ptr<RunUse> use = nullptr);

// "gemv_nvfp4.cu:412:5" for an instruction's `.loc`, "" when it has none.
std::string source_position(const Module& module, const SourcePos& src);

}  // namespace pipesim::ptx
