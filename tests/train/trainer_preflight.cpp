// The trainer tests' preflight (tests/unit/catch_main.cpp). The CUDA cases ([cuda]) run as one
// CTest entry of their own (trainer_cuda_cases) with FFCV_SKIP_WITHOUT_GPU=1: without a visible
// CUDA device the program then exits 77 before running anything, which CTest reports as
// skipped rather than passed.
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>

extern "C" int ffcv_test_preflight() {
  if (std::getenv("FFCV_SKIP_WITHOUT_GPU") != nullptr && !torch::cuda::is_available()) {
    std::printf("no CUDA device: the CUDA cases are skipped\n");
    return 77;
  }
  return -1;
}
