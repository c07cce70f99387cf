// Philox-4x32-10 against the known-answer vectors published with Random123.
#include <catch2/catch.hpp>

#include <set>

#include "ffcv/util/counter_random.hpp"

using namespace ffcv;

TEST_CASE("philox4x32-10 matches the Random123 known answers", "[random]") {
  using Out = std::array<std::uint32_t, 4>;
  CHECK(philox4x32({0, 0, 0, 0}, {0, 0}) == Out{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Out{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        Out{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("uniform01 is a pure function of its key and counter, spread evenly below 1",
          "[random]") {
  CHECK(uniform01(7, 1, 123, 0) == uniform01(7, 1, 123, 0));
  CHECK(uniform01(7, 1, 123, 0) != uniform01(8, 1, 123, 0));
  CHECK(uniform01(7, 1, 123, 0) != uniform01(7, 2, 123, 0));
  CHECK(uniform01(7, 1, 123, 0) != uniform01(7, 1, 124, 0));
  double sum = 0;
  int below_tenth = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double u = uniform01(42, 3, static_cast<std::uint64_t>(i), 0);
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    below_tenth += u < 0.1;
  }
  // Mean 0.5 with standard error 0.29/sqrt(1e5) ~ 0.0009; 0.1 share with error ~ 0.001.
  CHECK(sum / kDraws == Approx(0.5).margin(0.005));
  CHECK(below_tenth / double(kDraws) == Approx(0.1).margin(0.005));
}
