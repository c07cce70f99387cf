// The main of every Catch2 test program, compiled once into ffcv_catch_main (Catch's
// implementation alone takes longer to compile than most test files).
//
// A program whose cases cannot run in some environment defines ffcv_test_preflight(): it is
// called before any case and returns the exit status to end with at once (77 makes CTest report
// the entry as skipped, rather than passed), or a negative number to run the cases. Programs
// that do not define it run their cases directly.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

extern "C" int ffcv_test_preflight() __attribute__((weak));

int main(int argc, char* argv[]) {
  if (ffcv_test_preflight != nullptr) {
    const int status = ffcv_test_preflight();
    if (status >= 0) return status;
  }
  return Catch::Session().run(argc, argv);
}
