// `ffcv-train`: the program behind `ffcv run` (see cli/run_command.hpp).
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>

#include "cli/run_command.hpp"
#include "common/arguments.hpp"
#include "ffcv/storage/url_credentials.hpp"

int main(int argc, char** argv) {
  const ffcv::tools::CommandArgs args(argv + 1, argv + argc);
  try {
    return ffcv::tools::run_command(args);
  } catch (const ffcv::tools::UsageError& error) {
    std::fprintf(stderr, "ffcv run: %s (see ffcv run --help)\n",
                 ffcv::redact_url_passwords(error.what()).c_str());
    return 2;
  } catch (const c10::Error& error) {
    std::fprintf(stderr, "ffcv run: error: %s\n", error.what_without_backtrace());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv run: error: %s\n", ffcv::redact_url_passwords(error.what()).c_str());
    return 1;
  }
}
