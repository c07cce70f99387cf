// Internal: the two kinds of RangeReader that open_range_reader chooses between.
#pragma once

#include <memory>
#include <string>

#include "ffcv/storage/range_reader.hpp"

namespace ffcv {

// pread on a file opened read-only. Throws IoError when it cannot be opened or is a directory.
std::unique_ptr<RangeReader> open_file_range_reader(const std::string& path);

// HTTP(S) range requests through libcurl (see range_reader.hpp for what is checked and retried).
std::unique_ptr<RangeReader> open_http_range_reader(const std::string& url,
                                                    const ResolvedHttpOptions& options);

}  // namespace ffcv
