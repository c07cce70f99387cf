// The MAT-file reader (tools/sources/mat_file.hpp) on files scipy wrote (tests/unit/data/
// make_mat_fixtures.py), shaped as ImageNet's devkit meta.mat, plain and compressed; and every
// truncation and single-byte change of them: a clear error or a result, never a crash.
#include <catch2/catch.hpp>

#include "ffcv/util/errors.hpp"
#include "sources/mat_file.hpp"
#include "test_support.hpp"

using namespace ffcv;
using ffcv::tools::MatArray;

namespace {

std::vector<std::uint8_t> fixture(const std::string& name) {
  return test::read_file(std::string(FFCV_SOURCE_DIR) + "/tests/unit/data/" + name);
}

// Parses `bytes`; true when it read, false when it refused with ffcv::Error. Anything else
// (another exception, a crash) fails the test.
bool parses(const std::vector<std::uint8_t>& bytes) {
  try {
    tools::read_mat_file(bytes, "mutated.mat");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("MAT files scipy wrote read back: struct arrays, numbers and text", "[mat]") {
  for (const char* name : {"meta-plain.mat", "meta-compressed.mat"}) {
    INFO(name);
    const auto variables = tools::read_mat_file(fixture(name), name);
    REQUIRE(variables.count("synsets") == 1);
    const MatArray& synsets = variables.at("synsets");
    REQUIRE(synsets.kind == MatArray::Kind::kStruct);
    CHECK(synsets.element_count() == 4);
    CHECK(synsets.field_names ==
          std::vector<std::string>{"ILSVRC2012_ID", "WNID", "words", "num_children", "children"});
    CHECK(synsets.field(0, "WNID").text == "n01440764");
    CHECK(synsets.field(0, "words").text == "tench, Tinca tinca");
    CHECK(synsets.field(1, "ILSVRC2012_ID").numbers == std::vector<double>{2});
    CHECK(synsets.field(3, "ILSVRC2012_ID").numbers == std::vector<double>{1001});
    CHECK(synsets.field(3, "num_children").numbers == std::vector<double>{3});
    CHECK(synsets.field(3, "children").numbers == std::vector<double>{1, 2, 3});
    CHECK(synsets.field(0, "children").numbers.empty());
    CHECK_THROWS_AS(synsets.field(0, "gloss"), FormatError);
  }
}

TEST_CASE("MAT files cut short or changed anywhere give an error or a result, never a crash",
          "[mat]") {
  for (const char* name : {"meta-plain.mat", "meta-compressed.mat"}) {
    INFO(name);
    const std::vector<std::uint8_t> bytes = fixture(name);
    int refused = 0;
    for (std::size_t size = 0; size < bytes.size(); ++size) {
      refused += !parses(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + size));
    }
    CHECK(refused > 0);
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      for (const std::uint8_t value :
           {std::uint8_t{0x00}, std::uint8_t{0xFF}, std::uint8_t{0x7F}}) {
        std::vector<std::uint8_t> changed = bytes;
        changed[at] = value;
        parses(changed);
      }
    }
  }
  std::vector<std::uint8_t> not_mat(200, 'x');
  CHECK_THROWS_WITH(tools::read_mat_file(not_mat, "x.mat"),
                    Catch::Contains("x.mat") && Catch::Contains("level-5 header"));
}
