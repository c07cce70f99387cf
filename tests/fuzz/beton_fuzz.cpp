// Fuzz harness: any bytes opened as a .beton, then every sample of every field decoded through
// the default pipelines (ffcv::Loader, one worker). A file may be refused with an ffcv::Error
// (the reader validates the header, field descriptors, metadata and allocation table; a sample
// that cannot be decoded fails its batch); anything else (a crash, a sanitizer report, another
// exception type, a hang) is a finding.
#include <cstdint>

#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/errors.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ffcv::fuzz::FuzzInputFile file("fuzz.beton");
  const std::string& path = file.hold(data, size);
  try {
    const ffcv::Reader reader(path);
    // Reading every value through the reader's own accessors.
    for (std::uint64_t sample = 0; sample < reader.num_samples(); ++sample) {
      for (std::size_t field = 0; field < reader.fields().size(); ++field) {
        try {
          (void)reader.decode(sample, field);
        } catch (const ffcv::Error&) {
        }
      }
    }
  } catch (const ffcv::Error&) {
    return 0;
  }
  try {
    ffcv::LoaderOptions options;
    options.batch_size = 4;
    options.num_workers = 1;
    options.drop_last = false;
    options.on_error = ffcv::OnSampleError::kSkip;
    options.max_skipped_fraction = 1.0;
    ffcv::Loader loader(path, {}, options);
    auto epoch = loader.epoch(0);
    while (auto batch = epoch.next()) {
    }
  } catch (const ffcv::Error&) {
  }
  return 0;
}
