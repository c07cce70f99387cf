// `ffcv-train`: the program behind `ffcv run` (see cli/run_command.hpp).
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "cli/device_bench_command.hpp"
#include "cli/run_command.hpp"
#include "common/arguments.hpp"
#include "ffcv/storage/url_credentials.hpp"

int main(int argc, char** argv) {
  ffcv::tools::CommandArgs args(argv + 1, argv + argc);
  // `ffcv bench --device cuda` and `ffcv doctor --device cuda` run here, where LibTorch is
  // (bench_command.cpp, doctor_command.cpp).
  const bool bench = !args.empty() && args.front() == ffcv::tools::kDeviceBenchEntry;
  const bool doctor = !args.empty() && args.front() == ffcv::tools::kDeviceDoctorEntry;
  const char* command = bench ? "ffcv bench" : doctor ? "ffcv doctor" : "ffcv run";
  if (bench || doctor) args.erase(args.begin());
  try {
    if (bench) return ffcv::tools::device_bench_command(args);
    if (doctor) return ffcv::tools::device_doctor_command(args);
    return ffcv::tools::run_command(args);
  } catch (const ffcv::tools::UsageError& error) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", command,
                 ffcv::redact_url_passwords(error.what()).c_str(), command);
    return 2;
  } catch (const c10::Error& error) {
    std::fprintf(stderr, "%s: error: %s\n", command, error.what_without_backtrace());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: error: %s\n", command,
                 ffcv::redact_url_passwords(error.what()).c_str());
    return 1;
  }
}
