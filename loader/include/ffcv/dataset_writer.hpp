// DatasetWriter: writes a .beton file from a SampleSource, encoding on a thread pool.
//
// Workers load and encode samples in parallel; one committer places each sample's payloads into
// pages strictly in sample order. The page layout therefore depends only on the input, the
// fields and the seed, never on the number of threads or their timing: the same input gives
// the same bytes with 1 or 64 workers.
//
// Pages follow FFCV's rules: no allocation crosses a page boundary and all allocations of one
// sample share a page. When one sample needs more than the page size, the writer moves to the
// next power of two that holds it, starting a page at a multiple of the new size (earlier pages
// stay valid since every boundary of the new size is one of the old), instead of failing.
//
// The file is written under a temporary name beside the destination and renamed only when
// complete; on any error the temporary file is removed and an existing destination is untouched.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ffcv/field.hpp"

namespace ffcv {

// Random-access samples for the writer. load() is called concurrently from worker threads,
// unless loads_one_at_a_time() says otherwise.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::uint64_t size() const = 0;
  // The sample's values, one per field in the writer's field order.
  virtual std::vector<FieldValue> load(std::uint64_t index) const = 0;
  // Where sample `index` comes from, for error messages (e.g. a source file path).
  virtual std::string describe(std::uint64_t index) const;
  // A hint that load(index) comes soon: a source that reads files may start reading that
  // sample's now (the writer gives it, in order, up to kReadAhead samples ahead of those it
  // encodes, from a thread of its own, concurrently with load()), so that reads from slow or
  // cold storage overlap the encoding. It may block (opening a file on cold storage does), but
  // never throws and may do nothing (the default); load() reports whatever is wrong with the file.
  virtual void prefetch(std::uint64_t index) const;
  static constexpr std::uint64_t kReadAhead = 256;
  // True for a source whose load() must run one call at a time, in the order of the file's rows,
  // as a plain loop over it would call it: a Python dataset whose __getitem__ seeds or draws from
  // a global random generator gives each sample what that loop gives only then. The workers
  // still encode in parallel; only the loads take turns.
  virtual bool loads_one_at_a_time() const { return false; }
};

struct WriterOptions {
  std::uint64_t page_size = kDefaultPageSize;  // a power of two in [2 MiB, 2 GiB]
  int num_workers = 0;                         // 0: one per available core
  std::uint64_t seed = 0;                      // keys random write decisions
  // Called on the calling thread about 10 times a second and once at the end.
  std::function<void(std::uint64_t done, std::uint64_t total)> on_progress;
  // A sample that cannot be loaded or encoded (an undecodable source image): false stops the
  // write with its error; true leaves it out (the samples after it move up one place, keeping
  // their order) and reports it to on_skipped, on the calling thread. A source that cannot be
  // read (load() throws IoError: a file or archive gone or damaged) stops the write either way.
  bool skip_bad_samples = false;
  // FFCV's shuffle_indices: the file's row i holds the source's sample perm[i], a permutation
  // keyed by `seed`. A source in class order (an image folder) is then not in class order in
  // the file, so QUASI_RANDOM, which shuffles within a window of pages, still mixes classes.
  bool shuffle_indices = false;
  std::function<void(std::uint64_t index, const std::string& source, const std::string& error)>
      on_skipped;
};

// Where a write's time went. Worker stages are summed over the samples written (seconds of all
// workers together); the committer's are its own. With W workers and a wall time T, the
// workers were busy (load + encode) / (W * T) of the time and the committer place / T: a
// committer near 1 is the bottleneck.
struct WriteStageSeconds {
  double load = 0;    // SampleSource::load: reading files (and decoding non-JPEG formats)
  double encode = 0;  // the fields' encode(); tally splits out its decode, resize and compress
  double place = 0;   // committer: placing payloads in pages and writing full pages
  double committer_wait = 0;  // committer: waiting for the next sample in order
  // After the last sample: the last pages written, the tables and the header, the flush to disk
  // and the rename into place (which, when it replaces an existing file, frees that file's
  // blocks: on a file system mounted with `discard` that takes time in proportion to its size).
  double finish = 0;
};

struct WriteSummary {
  std::uint64_t num_samples = 0;  // written
  std::uint64_t skipped = 0;      // left out (WriterOptions::skip_bad_samples)
  std::uint64_t page_size = 0;    // final page size (larger than asked if a sample needed it)
  std::uint64_t num_pages = 0;
  std::uint64_t heap_bytes = 0;  // payload bytes, excluding page padding
  std::uint64_t file_size = 0;
  double seconds = 0;
  int workers = 0;  // encoder threads used
  WriteStageSeconds stages;
  EncodeTally tally;  // over the samples written
};

class DatasetWriter {
 public:
  // Throws ConfigError for bad options, field names (empty, non-ASCII, longer than 16 bytes,
  // duplicated) or an empty field list.
  DatasetWriter(std::string path, std::vector<NamedField> fields, WriterOptions options = {});

  // Writes every sample of `source`. Throws EncodeError naming the sample (and its source) that
  // could not be encoded, IoError when the output cannot be written.
  WriteSummary write(const SampleSource& source);

 private:
  WriteSummary write_rows(const SampleSource& rows);
  std::string path_;
  std::vector<NamedField> fields_;
  WriterOptions options_;
};

}  // namespace ffcv
