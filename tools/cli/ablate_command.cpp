// `ffcv ablate SPEC.toml`: sweeps loader and writer settings and tabulates what each costs
// (tools/ablate/: the spec, the runs, the report).
#include <cstdio>
#include <filesystem>

#include "ablate/ablation_report.hpp"
#include "ablate/ablation_run.hpp"
#include "ablate/ablation_spec.hpp"
#include "cli/arguments.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "cli/spawn.hpp"
#include "ffcv/errors.hpp"

namespace ffcv::tools {

int ablate_command(const CommandArgs& argv) {
  Arguments args("ablate",
                 "Sweep loader and writer settings over one dataset: write each needed .beton "
                 "once, run `ffcv bench` per combination in a process of its own, and write a "
                 "table (CSV, JSON, Markdown) and plots of samples/s, peak memory, file size and "
                 "bytes read. An interrupted sweep goes on where it stopped when run again. The "
                 "spec's format: docs/tuning.md.");
  args.positional("SPEC",
                  "the sweep, a TOML file ([dataset], [write], [bench], [sweep]; or [train] "
                  "with a recipe, to train each cell)")
      .option("output", "DIR", "where datasets, results and plots go [default: ablations/SPEC]")
      .flag("list", "print the cells and exit")
      .flag("quiet", "print nothing but errors and the report's paths");
  if (!args.parse(argv)) return 0;
  const AblationSpec spec = load_ablation_spec(args.get("SPEC"));
  const std::vector<AblationCell> cells = expand_cells(spec);
  check_training_cells(spec, cells);
  if (args.get_flag("list")) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::printf("%zu %s\n", i, cell_label(spec, cells[i]).c_str());
    }
    return 0;
  }
  namespace fs = std::filesystem;
  const std::string output = args.get_optional("output").value_or("ablations/" + spec.name);
  std::error_code error;
  if (fs::exists(output, error)) {
    if (!fs::is_directory(output, error)) {
      throw UsageError("--output " + output + " is a file, not a folder");
    }
    const bool ours = fs::exists(fs::path(output) / "cells.tsv", error) ||
                      fs::exists(fs::path(output) / "datasets", error);
    if (!ours && !fs::is_empty(output, error)) {
      throw UsageError("--output " + output +
                       " holds other files and no earlier sweep (cells.tsv); choose an empty or "
                       "new folder");
    }
  }
  AblationRunOptions options;
  options.output_dir = output;
  options.ffcv_program = this_program();
  options.quiet = args.get_flag("quiet");
  if (!options.quiet) {
    std::printf("%s: %zu cells into %s\n", spec.path.c_str(), cells.size(), output.c_str());
  }
  const AblationOutcome outcome = run_ablation(spec, cells, options);
  if (outcome.interrupted) return 130;
  std::string command = "ffcv ablate " + spec.path;
  if (args.has("output")) command += " --output " + output;
  for (const std::string& path :
       write_ablation_tables(spec, cells, outcome.results, output, command)) {
    std::printf("wrote %s\n", path.c_str());
  }
  std::printf("%s\n",
              run_plot_script(FFCV_PLOT_PYTHON, FFCV_ABLATE_PLOT_SCRIPT, output + "/ablation.json")
                  .c_str());
  std::size_t failed = 0;
  for (const CellResult& result : outcome.results) failed += !result.ok;
  if (failed > 0) {
    std::printf("%zu of %zu cells failed; their errors are in the table\n", failed, cells.size());
  }
  return 0;
}

}  // namespace ffcv::tools
