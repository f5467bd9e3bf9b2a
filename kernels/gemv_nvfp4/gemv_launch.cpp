// gemv_launch M K L [ARCH] [--broken]: the PTX launch file of the NVFP4 GEMV's TMA kernel at one
// shape (docs/ptx.md), for `pipesim check gemv_nvfp4.ptx --launch`. Needs no GPU.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gemv_launch M K L [sm_90a|sm_100a] [--broken]\n");
    return 2;
  }
  std::string arch = "sm_90a";
  bool broken = false;
  for (int i = 4; i < argc; ++i) {
    if (std::string(argv[i]) == "--broken") broken = true;
    else arch = argv[i];
  }
  const std::string json = pipesim::kernels::gemv_nvfp4_launch_json(std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), arch, broken);
  if (json.empty()) {
    std::fprintf(stderr, "gemv_launch: no plan for %s x %s x %s on %s\n", argv[1], argv[2], argv[3], arch.c_str());
    return 2;
  }
  std::fputs(json.c_str(), stdout);
  return 0;
}
