// The `ffcv` subcommands. Each takes its arguments (after the subcommand name) and returns the
// process exit status; errors propagate as exceptions that main() prints as one line.
#pragma once

#include <cstdint>

#include <string>
#include <vector>

#include "cli/doctor_verdict.hpp"
#include "common/arguments.hpp"

namespace ffcv::tools {

using CommandArgs = std::vector<std::string>;

int write_command(const CommandArgs& args);
int inspect_command(const CommandArgs& args);
int bench_command(const CommandArgs& args);
int doctor_command(const CommandArgs& args);
int ablate_command(const CommandArgs& args);
// `ffcv run` executes the trainer's own program: common/trainer_exec.hpp.
// The options of `ffcv bench` and `ffcv write`, and the checks `write` makes of them before any
// work: for a command that passes settings on to them (ablate) and checks them first.
Arguments bench_arguments();
// Adds --device and --image-decode (bench and doctor).
void add_device_arguments(Arguments& args);
// Throws UsageError for a --device / --image-decode pair bench cannot run.
void check_bench_device(const Arguments& args);
// The first argument with which `ffcv bench --device cuda` runs ffcv-train.
inline constexpr const char* kDeviceBenchEntry = "--bench-on-device";
// `ffcv doctor`'s options, and the first argument with which `ffcv doctor --device cuda` runs
// ffcv-train. Its verdict and output, on the CPU or the device: cli/doctor_verdict.hpp.
Arguments doctor_arguments();
inline constexpr const char* kDeviceDoctorEntry = "--doctor-on-device";
Arguments write_command_arguments();
void check_write_command_options(const Arguments& args);

}  // namespace ffcv::tools
