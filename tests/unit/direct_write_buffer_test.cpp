// DirectWriteBuffer (ffcv/util/direct_write_buffer.hpp): aligned as O_DIRECT and huge pages need
// it, the size asked for, and its bytes written past the page cache read back the same.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/direct_write_buffer.hpp"
#include "ffcv/util/whole_file.hpp"
#include "test_support.hpp"

using namespace ffcv;

TEST_CASE("a direct-write buffer is block-aligned, and 2 MiB-aligned from 2 MiB up", "[buffers]") {
  for (const std::size_t size : {std::size_t{4096}, std::size_t{1} << 20, std::size_t{2} << 20,
                                 std::size_t{8} << 20, (std::size_t{8} << 20) + 4096}) {
    INFO(size << " bytes");
    DirectWriteBuffer buffer(size);
    REQUIRE(buffer.data() != nullptr);
    CHECK(buffer.size() == size);
    const auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
    CHECK(address % AtomicFile::kBlockAlignment == 0);
    if (size >= (std::size_t{2} << 20)) CHECK(address % (std::size_t{2} << 20) == 0);
    buffer.data()[0] = 1;  // writable at both ends
    buffer.data()[size - 1] = 2;
  }
  CHECK(DirectWriteBuffer().data() == nullptr);
  CHECK(DirectWriteBuffer().size() == 0);
}

TEST_CASE("a direct-write buffer's blocks written past the page cache read back the same",
          "[buffers]") {
  test::TempDir dir;
  const std::size_t size = std::size_t{4} << 20;
  DirectWriteBuffer buffer(size);
  REQUIRE(buffer.data() != nullptr);
  for (std::size_t i = 0; i < size; ++i) buffer.data()[i] = static_cast<std::uint8_t>(i * 131 >> 3);
  AtomicFile file(dir.file("blocks.bin"));
  file.write_blocks_at(0, buffer.data(), size);
  file.write_blocks_at(size, buffer.data(), size);
  file.commit();
  const std::vector<std::uint8_t> back = read_whole_file(dir.file("blocks.bin"));
  REQUIRE(back.size() == 2 * size);
  for (std::size_t i = 0; i < 2 * size; i += 4093) {
    INFO("byte " << i);
    REQUIRE(back[i] == buffer.data()[i % size]);
  }
  CHECK(std::equal(back.begin(), back.begin() + size, buffer.data()));
  CHECK(std::equal(back.begin() + size, back.end(), buffer.data()));
}
