// Running an ablation sweep: the datasets it needs, then one measurement per cell.
//
// The output folder holds
//   images/           the imagenet-like JPEG tree (source = "imagenet-like"), generated once
//   datasets/*.beton  one file per distinct set of writer settings, written once
//   cells.tsv         one line per finished cell, appended as each finishes (fsync'd)
// and, from the report (ablation_report.hpp), the tables and plots.
//
// Each cell runs `ffcv bench FILE --json` with its settings in a process of its own, so that
// its peak memory (the child's ru_maxrss) and the bytes it read from storage (ru_inblock, for
// the OS cache; the process cache counts its own reads) are its alone. A training sweep runs
// `ffcv run RECIPE --set ...` per cell instead, in runs/cell-HASH/, and takes the validation
// top-1, images/s and the loader's wait share from the run's summary and log.
//
// Resuming: a cell whose key (ablation_spec.hpp) finished in cells.tsv is not run again, and
// a dataset already written is not written again; so an interrupted sweep, run again with the
// same spec and output folder, goes on where it stopped. A cell that failed (a setting the
// loader refuses, such as a budget too small for the order) is recorded with its error and
// reported as failed; the others go on, and the next run tries it again. What the cells do not
// name (the dataset, a training sweep's recipe) is the folder's record, checked by the command
// before it calls run_ablation (folder_provenance.hpp). A failed cell's error is the first error
// line of its process (error_line in child_process.hpp).
//
// A URL's password (a beton source or a swept data.train at http://user:pw@host/...) reaches the
// cells' processes outside their command lines (spawn.hpp), and cells.tsv, the tables and the
// progress lines leave it out (url_credentials.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ablate/ablation_spec.hpp"

namespace ffcv::tools {

struct CellResult {
  std::string key;
  bool ok = false;
  std::string error;                 // when !ok: the one-line reason
  double samples_per_s = 0;          // the median epoch's
  double seconds = 0;                // the whole measurement's wall time
  std::uint64_t peak_rss_bytes = 0;  // of the measuring process
  std::uint64_t file_bytes = 0;      // the .beton's size
  double read_bytes_per_epoch = 0;   // from storage
  double loader_wait_share = 0;      // consumer's wait for batches / epoch time (median epoch)
  double distinct_pages_per_batch = 0;
  double val_top1 = -1;  // training cells: final validation top-1 (0..1); -1 otherwise
};

struct AblationRunOptions {
  std::string output_dir;
  std::string ffcv_program;  // the `ffcv` executable that writes and measures
  bool quiet = false;
};

struct AblationOutcome {
  std::vector<CellResult> results;  // one per cell, in cell order
  std::uint64_t reused = 0;         // cells found in cells.tsv
  bool interrupted = false;         // SIGINT/SIGTERM: the sweep stopped; finished cells kept
  int signal = 0;                   // when interrupted: which signal
};

// Runs what is missing of the sweep. Throws IoError for an output folder that cannot be written,
// ConfigError when a dataset cannot be written (the sweep cannot go on without it).
AblationOutcome run_ablation(const AblationSpec& spec, const std::vector<AblationCell>& cells,
                             const AblationRunOptions& options);

// The results recorded in `cells_tsv`, keyed by cell key (the last line wins).
std::vector<CellResult> read_cell_results(const std::string& cells_tsv);

}  // namespace ffcv::tools
