// `ffcv ablate SPEC.toml`: sweeps loader and writer settings and tabulates what each costs
// (tools/ablate/: the spec, the runs, the report).
#include <cstdio>
#include <filesystem>

#include "ablate/ablation_report.hpp"
#include "ablate/ablation_run.hpp"
#include "ablate/ablation_spec.hpp"
#include "cli/commands.hpp"
#include "common/arguments.hpp"
#include "common/child_process.hpp"
#include "common/spawn.hpp"
#include "common/stop_request.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/train/folder_lock.hpp"
#include "ffcv/train/folder_provenance.hpp"
#include "ffcv/util/errors.hpp"

namespace ffcv::tools {
namespace {

// The spec and its cells, checked before any work; a spec that cannot run is a bad command
// (exit 2), whatever is wrong with it.
struct CheckedSpec {
  AblationSpec spec;
  std::vector<AblationCell> cells;
};

CheckedSpec checked_spec(const std::string& path) {
  try {
    CheckedSpec checked;
    checked.spec = load_ablation_spec(path);
    checked.cells = expand_cells(checked.spec);
    check_training_cells(checked.spec, checked.cells);
    return checked;
  } catch (const ConfigError& error) {
    throw UsageError(error.what());
  }
}

// Whether `output` holds an earlier sweep's files.
bool holds_sweep(const std::string& output) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (const char* name : {"cells.tsv", "datasets", "made_from.tsv", ".lock"}) {
    if (fs::exists(fs::path(output) / name, error)) return true;
  }
  return false;
}

Arguments ablate_arguments() {
  Arguments args("ablate",
                 "Sweep loader and writer settings over one dataset: write each needed .beton "
                 "once, run `ffcv bench` per combination in a process of its own, and write a "
                 "table (CSV, JSON, Markdown) and plots of samples/s, peak memory, file size and "
                 "bytes read. An interrupted sweep goes on where it stopped when run again, trying "
                 "failed cells again; a folder of a sweep over another dataset or recipe is "
                 "refused (--fresh moves it aside). Exit status 1 when cells failed. The "
                 "spec's format: docs/tuning.md.");
  args.positional("SPEC",
                  "the sweep, a TOML file ([dataset], [write], [bench], [sweep]; or [train] "
                  "with a recipe, to train each cell)")
      .option("output", "DIR", "where datasets, results and plots go [default: ablations/SPEC]")
      .non_empty()
      .flag("list", "print the cells and exit")
      .flag("fresh",
            "move an earlier sweep's results in the output folder aside (to "
            "DIR-before-DATE-TIME) and start afresh; needed once the dataset or recipe changed")
      .flag("quiet", "print nothing but errors and the report's paths");
  return args;
}

// An existing `output` must be a folder, empty or an earlier sweep's; with `fresh`, an earlier
// sweep's is moved aside (unless a sweep is running in it).
void check_output_folder(const std::string& output, bool fresh) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(output, error)) return;
  if (!fs::is_directory(output, error)) {
    throw UsageError("--output " + output + " is a file, not a folder");
  }
  const bool ours = holds_sweep(output);
  if (!ours && !fs::is_empty(output, error)) {
    throw UsageError("--output " + output +
                     " holds other files and no earlier sweep (cells.tsv); choose an empty or "
                     "new folder");
  }
  if (ours && fresh) {
    if (const long holder = train::folder_lock_holder(output); holder != 0) {
      throw train::FolderBusyError(train::folder_busy_message(output, "ablation folder", holder));
    }
    const std::string aside = train::move_folder_aside(output);
    std::printf("--fresh: the earlier results in %s were moved to %s\n", output.c_str(),
                aside.c_str());
  }
}

// Writes the tables and plots of the sweep's `outcome`; returns the exit status: 1 when cells
// failed.
int report_sweep(const Arguments& args, const AblationSpec& spec,
                 const std::vector<AblationCell>& cells, const AblationOutcome& outcome,
                 const std::string& output) {
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
    std::fprintf(stderr,
                 "ffcv ablate: %zu of %zu cells failed; their errors are in the table, and the "
                 "same command tries them again\n",
                 failed, cells.size());
    return 1;
  }
  return 0;
}

}  // namespace

int ablate_command(const CommandArgs& argv) {
  Arguments args = ablate_arguments();
  if (!args.parse(argv)) return 0;
  const CheckedSpec checked = checked_spec(args.get("SPEC"));
  const AblationSpec& spec = checked.spec;
  const std::vector<AblationCell>& cells = checked.cells;
  if (args.get_flag("list")) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      std::printf("%zu %s\n", i, redact_url_passwords(cell_label(spec, cells[i])).c_str());
    }
    return 0;
  }
  const std::string output = args.get_optional("output").value_or("ablations/" + spec.name);
  check_output_folder(output, args.get_flag("fresh"));
  // Held until the sweep ends: no second sweep measures into the folder meanwhile.
  const train::FolderLock lock(output, "ablation folder");
  const std::vector<train::ProvenanceDifference> differences =
      train::check_provenance(output, ablation_provenance(spec));
  if (!differences.empty()) {
    throw UsageError("--output " + output + " holds results made from another dataset or recipe: " +
                     train::describe_differences(differences) +
                     "; run with --fresh to move them aside and start afresh, or give another "
                     "--output");
  }
  AblationRunOptions options;
  options.output_dir = output;
  options.ffcv_program = this_program();
  options.quiet = args.get_flag("quiet");
  if (!options.quiet) {
    std::printf("%s: %zu cells into %s\n", spec.path.c_str(), cells.size(), output.c_str());
  }
  const AblationOutcome outcome = run_ablation(spec, cells, options);
  if (outcome.interrupted) return interrupted_status(outcome.signal);
  return report_sweep(args, spec, cells, outcome, output);
}

}  // namespace ffcv::tools
