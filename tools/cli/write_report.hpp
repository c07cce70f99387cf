// What `ffcv write` reports about the work it did: the --json object (sizes, rate, where the
// time went per stage) and what became of the source JPEGs, as JSON for --json and the sources
// sidecar and as one line for the terminal.
#pragma once

#include <optional>
#include <string>

#include "ffcv/dataset_writer.hpp"

namespace ffcv::tools {

// {"dct_scaled": n, "stored_jpegs": {"kept": n, "resized": n, "finer quality": n, ...}}: the
// source JPEGs stored as JPEG, by what became of them (jpeg_coding.hpp), and how many source
// JPEGs were decoded at a reduced DCT scale.
std::string encode_tally_json(const EncodeTally& tally);

// The whole --json object: output, samples, skipped, pages, page_size, file_bytes, seconds,
// samples_per_s, workers, "stages" (seconds: load, encode and its decode, resize, compress and
// check, place, committer_wait), "busy" (the share of the wall time the workers and the
// committer worked) and "images" (encode_tally_json).
std::string write_summary_json(const std::string& output, const WriteSummary& summary);

// "source JPEGs: 812 kept as they came, 1188 encoded again (1100 resized, 88 finer quality)\n",
// or "" when no source JPEG was stored as JPEG.
std::string stored_jpegs_line(const EncodeTally& tally);

// What became of the source JPEGs of the local .beton at `beton_path`, as its sources sidecar
// (source_report.hpp) recorded it: nullopt when there is no sidecar, it holds no "images", or
// it describes another file (its "file_bytes" differ from the file's size: the .beton was
// written again by something that left the sidecar behind).
std::optional<EncodeTally> sidecar_tally(const std::string& beton_path);

}  // namespace ffcv::tools
