// The trainer tests' main. Catch2 2 cannot skip a case, so the CUDA cases ([cuda]) run as one
// CTest entry of their own (trainer_cuda_cases) with FFCV_SKIP_WITHOUT_GPU=1: without a visible
// CUDA device the program then exits 77 before running anything, which CTest reports as
// skipped rather than passed.
#define CATCH_CONFIG_RUNNER
#include <torch/cuda.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

int main(int argc, char* argv[]) {
  if (std::getenv("FFCV_SKIP_WITHOUT_GPU") != nullptr && !torch::cuda::is_available()) {
    std::printf("no CUDA device: the CUDA cases are skipped\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
