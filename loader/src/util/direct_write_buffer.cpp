#include "ffcv/util/direct_write_buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>

#include "ffcv/util/atomic_file.hpp"

namespace ffcv {
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

DirectWriteBuffer::DirectWriteBuffer(std::size_t size) : size_(size) {
  const bool huge = size >= kHugePage;
  const std::size_t alignment = huge ? kHugePage : AtomicFile::kBlockAlignment;
  const std::size_t rounded = (size + alignment - 1) / alignment * alignment;
  data_.reset(static_cast<std::uint8_t*>(std::aligned_alloc(alignment, rounded)));
  // Before the first touch, so that the pages are huge from the start; a hint only.
  if (data_ && huge) (void)::madvise(data_.get(), rounded, MADV_HUGEPAGE);
}

void DirectWriteBuffer::Free::operator()(std::uint8_t* block) const { std::free(block); }

}  // namespace ffcv
