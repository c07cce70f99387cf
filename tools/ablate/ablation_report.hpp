// The report of an ablation sweep, written into its output folder:
//   ablation.csv   one row per cell: the axis values, then the figures (empty for a failed cell)
//   ablation.json  the spec's axes and the same rows, for scripts
//   ablation.md    the same table for people, with the command and machine
//   ablation*.png  plots (tools/ablate/plot_ablation.py, with matplotlib): samples/s against
//                  each axis, one line per combination of the other axes; for exactly two axes,
//                  a heatmap as well
#pragma once

#include <string>
#include <vector>

#include "ablate/ablation_run.hpp"
#include "ablate/ablation_spec.hpp"

namespace ffcv::tools {

// Writes the tables (each replaced atomically). Returns the paths written.
std::vector<std::string> write_ablation_tables(const AblationSpec& spec,
                                               const std::vector<AblationCell>& cells,
                                               const std::vector<CellResult>& results,
                                               const std::string& output_dir,
                                               const std::string& command_line);

}  // namespace ffcv::tools
