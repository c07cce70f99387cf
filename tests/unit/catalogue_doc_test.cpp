// The step declarations (ffcv/steps/step_schema.hpp) against their factories and the docs:
// docs/catalogue.md's parameter tables are generated from the built-in steps' declarations and
// must be up to date (FFCV_UPDATE_DOCS=1 rewrites them: run this file's cases with it set), every
// built-in step declares its parameters and builds from them, and the registry's checks word
// their errors as the rules do.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "ffcv/steps/op_registry.hpp"
#include "ffcv/steps/step_schema.hpp"
#include "ffcv/util/errors.hpp"

using namespace ffcv;

namespace {

const std::string kCatalogue = std::string(FFCV_SOURCE_DIR) + "/docs/catalogue.md";
const std::string kBegin =
    "<!-- BEGIN parameter tables: generated from the step declarations in "
    "loader/src/ops/builtin_steps.cpp by tests/unit/catalogue_doc_test.cpp "
    "(FFCV_UPDATE_DOCS=1 ffcv_unit_tests '[catalogue]' rewrites them) -->";
const std::string kEnd = "<!-- END parameter tables -->";

const OpRegistry& builtins() {
  static OpRegistry* registry = [] {
    auto* built = new OpRegistry;
    register_builtin_steps(*built);
    return built;
  }();
  return *registry;
}

// One kind of step: its title, its names and its declarations.
struct StepKind {
  std::string title;
  std::vector<std::pair<std::string, std::string>> steps;
  std::function<std::optional<StepSchema>(const std::string&)> schema;
};

std::vector<StepKind> step_kinds() {
  const OpRegistry& registry = builtins();
  return {
      {"Decoders", registry.decoders(),
       [&](const std::string& name) { return registry.decoder_schema(name); }},
      {"Operations", registry.operations(),
       [&](const std::string& name) { return registry.operation_schema(name); }},
      {"Batch operations", registry.batch_operations(),
       [&](const std::string& name) { return registry.batch_operation_schema(name); }},
  };
}

std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string default_cell(const ParamSpec& spec) {
  const std::string text = default_text(spec);
  return spec.fallback.mode == ParamDefault::Mode::kValue ? "`" + text + "`" : cell(text);
}

// The generated part of docs/catalogue.md, markers included.
std::string parameter_tables() {
  std::ostringstream out;
  out << kBegin << "\n";
  for (const StepKind& kind : step_kinds()) {
    out << "\n### " << kind.title << "\n\n"
        << "| step | parameter | type | default | rule | meaning |\n"
        << "|---|---|---|---|---|---|\n";
    for (const auto& [name, summary] : kind.steps) {
      const StepSchema schema = kind.schema(name).value();
      if (schema.empty()) out << "| `" << name << "` | | | | | takes no parameters |\n";
      for (std::size_t i = 0; i < schema.size(); ++i) {
        const ParamSpec& spec = schema[i];
        const std::string rule = rule_text(spec);
        out << "| " << (i == 0 ? "`" + name + "`" : "") << " | `" << spec.name << "` | "
            << kind_text(spec.kind) << " | " << default_cell(spec) << " | "
            << (rule.empty() ? "any" : cell(rule)) << " | " << cell(spec.doc) << " |\n";
      }
    }
  }
  out << "\n" << kEnd;
  return out.str();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The example values of required parameters, by name, for building every step.
OpParams minimal_params(const std::string& step, const StepSchema& schema) {
  const std::map<std::string, ParamValue> examples = {
      {"mean", std::vector<double>{1, 2, 3}},
      {"std", std::vector<double>{4, 5, 6}},
      {"count", std::int64_t{8}},
      {"size", std::int64_t{8}},
      {"padding", std::int64_t{1}},
      {"magnitude", 0.5},
      {"mask", std::vector<double>{0, 0, 0}},
      {"alpha", 0.5},
      {"indices", std::vector<double>{0}},
      {"label", std::int64_t{1}},
      {"num_classes", std::int64_t{3}},
  };
  OpParams params;
  for (const ParamSpec& spec : schema) {
    const bool crop_size = spec.name == "size" && step.find("crop") != std::string::npos;
    if (spec.fallback.mode == ParamDefault::Mode::kRequired || crop_size) {
      INFO(step << " needs an example of '" << spec.name << "'");
      REQUIRE(examples.contains(spec.name));
      params.set(spec.name, examples.at(spec.name));
    }
  }
  return params;
}

void build(const std::string& title, const std::string& name, const OpParams& params) {
  if (title == "Decoders") {
    CHECK(builtins().make_decoder(name, params) != nullptr);
  } else if (title == "Operations") {
    CHECK(builtins().make_operation(name, params) != nullptr);
  } else {
    CHECK(builtins().make_batch_operation(name, params) != nullptr);
  }
}

std::string operation_error(const std::string& name, const OpParams& params) {
  try {
    builtins().make_operation(name, params);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("docs/catalogue.md's parameter tables are the step declarations", "[catalogue]") {
  const std::string text = read_text(kCatalogue);
  const std::size_t begin = text.find(kBegin);
  const std::size_t end = text.find(kEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  REQUIRE(begin < end);
  const std::string documented = text.substr(begin, end + kEnd.size() - begin);
  const std::string generated = parameter_tables();
  const char* update = std::getenv("FFCV_UPDATE_DOCS");
  if (documented != generated && update != nullptr && std::string(update) == "1") {
    std::ofstream(kCatalogue, std::ios::binary)
        << text.substr(0, begin) << generated << text.substr(end + kEnd.size());
    WARN("rewrote the parameter tables of " << kCatalogue);
    return;
  }
  // The first line that differs, then the whole text, so a failure says what to change.
  std::istringstream doc_lines(documented), gen_lines(generated);
  std::string doc_line, gen_line;
  int line = 0;
  while (std::getline(gen_lines, gen_line)) {
    ++line;
    if (!std::getline(doc_lines, doc_line) || doc_line != gen_line) break;
  }
  INFO(
      "the tables are out of date; FFCV_UPDATE_DOCS=1 ffcv_unit_tests '[catalogue]' rewrites "
      "them. First difference, line "
      << line << " of the generated block:\n  doc:       " << doc_line
      << "\n  generated: " << gen_line);
  CHECK(documented == generated);
}

TEST_CASE("every built-in step declares its parameters and builds from the declaration",
          "[catalogue]") {
  for (const StepKind& kind : step_kinds()) {
    for (const auto& [name, summary] : kind.steps) {
      INFO(kind.title << ": " << name);
      const std::optional<StepSchema> schema = kind.schema(name);
      REQUIRE(schema.has_value());
      for (const ParamSpec& spec : *schema) CHECK_FALSE(spec.doc.empty());
      // With the required parameters only: the registry fills in every default and the factory
      // reads exactly the declared parameters (check_factory_reads would throw otherwise).
      OpParams params = minimal_params(name, *schema);
      build(kind.title, name, params);
      // With every default given explicitly: the same.
      for (const ParamSpec& spec : *schema) {
        if (spec.fallback.mode == ParamDefault::Mode::kValue) {
          params.set(spec.name, spec.fallback.value);
        }
      }
      build(kind.title, name, params);
    }
  }
}

TEST_CASE("declared parameters are checked by name, kind and rule", "[catalogue]") {
  // An unknown name: the nearest declared one and the list.
  CHECK(operation_error("random_horizontal_flip", OpParams({{"probabilty", 0.3}})) ==
        "operation 'random_horizontal_flip' does not take parameter 'probabilty' (did you mean "
        "'probability'?); it takes: probability");
  CHECK_THAT(operation_error("convert", OpParams({{"x", 1.0}})),
             Catch::Contains("'x'; it takes: dtype"));
  CHECK_THROWS_WITH(builtins().make_decoder("int", OpParams({{"size", std::int64_t{3}}})),
                    Catch::Contains("it takes none"));
  // Out of range: the rule as range_text words it.
  CHECK(operation_error("random_horizontal_flip", OpParams({{"probability", 1.5}})) ==
        "operation 'random_horizontal_flip': parameter 'probability' must be in [0, 1], got 1.5");
  CHECK(operation_error("cutout", OpParams({{"size", std::int64_t{0}}})) ==
        "operation 'cutout': parameter 'size' must be >= 1, got 0");
  CHECK(operation_error("normalize", OpParams({{"mean", std::vector<double>{0, 0}},
                                               {"std", std::vector<double>{1, 0}}})) ==
        "operation 'normalize': parameter 'std' must be > 0, got 0 (element 1)");
  CHECK_THAT(operation_error("random_brightness",
                             OpParams({{"magnitude", std::numeric_limits<double>::infinity()}})),
             Catch::Contains("'magnitude' must be a finite number"));
  // Kinds, pairs, choices, required.
  CHECK(operation_error("random_translate", OpParams({{"padding", 1.5}})) ==
        "operation 'random_translate': parameter 'padding' must be an integer, got a number");
  CHECK(operation_error("poison", OpParams({{"mask", std::vector<double>{0}},
                                            {"alpha", 0.5},
                                            {"indices", std::vector<double>{0}},
                                            {"clamp", std::vector<double>{9, 1}}})) ==
        "operation 'poison': parameter 'clamp' must be [low, high] with low <= high, got [9, 1]");
  CHECK_THAT(operation_error("poison", OpParams({{"mask", std::vector<double>{0}},
                                                 {"alpha", std::vector<double>{0.5, 2}},
                                                 {"indices", std::vector<double>{0}}})),
             Catch::Contains("'alpha' must be in [0, 1], got 2 (element 1)"));
  CHECK_THROWS_WITH(
      builtins().make_decoder("center_crop", OpParams({{"size", std::int64_t{8}},
                                                       {"interpolation", std::string("cubic")}})),
      "decoder 'center_crop': parameter 'interpolation' must be one of area, linear; got 'cubic'");
  CHECK_THROWS_WITH(builtins().make_decoder(
                        "random_resized_crop",
                        OpParams({{"size", std::int64_t{8}}, {"scale", std::vector<double>{1}}})),
                    "decoder 'random_resized_crop': parameter 'scale' must be two numbers, got 1");
  CHECK(operation_error("unpack_bits", {}) ==
        "operation 'unpack_bits': parameter 'count' is required");
  CHECK_THROWS_WITH(builtins().make_batch_operation("image_mixup", OpParams({{"group", -1.0}})),
                    "batch operation 'image_mixup': parameter 'group' must be an integer, got a "
                    "number");
  CHECK_THROWS_WITH(
      builtins().make_batch_operation("image_mixup", OpParams({{"group", std::int64_t{70000}}})),
      "batch operation 'image_mixup': parameter 'group' must be in [0, 65535], got 70000");
}

TEST_CASE("a declaration and its factory must agree, undeclared steps keep the older check",
          "[catalogue]") {
  class Copy final : public Operation {
   public:
    std::string name() const override { return "copy"; }
    TensorState declare(const TensorState& input) override { return input; }
    void apply(const std::uint8_t*, std::uint8_t*, std::span<std::uint8_t>,
               const SampleContext&) const override {}
  };
  OpRegistry registry;
  // Declared, but the factory reads another name: an Error at build time.
  registry.register_operation("reads_other", "",
                              {{"a", ParamKind::kNumber, defaults_to(1.0), any(), "a"}},
                              [](const OpParams& params) {
                                params.require_double("a");
                                params.get_double("b", 2.0);
                                return std::make_shared<Copy>();
                              });
  CHECK_THROWS_WITH(registry.make_operation("reads_other", {}),
                    "operation 'reads_other' reads parameter 'b', which its declaration lacks");
  // Declared, but the factory never reads it.
  registry.register_operation("reads_nothing", "",
                              {{"a", ParamKind::kNumber, defaults_to(1.0), any(), "a"}},
                              [](const OpParams&) { return std::make_shared<Copy>(); });
  CHECK_THROWS_WITH(registry.make_operation("reads_nothing", {}),
                    "operation 'reads_nothing' declares parameter 'a' but does not read it");
  // Undeclared: the factory's own fallbacks, and unread parameters refused.
  double seen = 0;
  registry.register_operation("undeclared", "", [&](const OpParams& params) {
    seen = params.get_double("a", 3.0);
    return std::make_shared<Copy>();
  });
  CHECK(registry.operation_schema("undeclared") == std::nullopt);
  registry.make_operation("undeclared", {});
  CHECK(seen == 3.0);
  CHECK_THROWS_WITH(registry.make_operation("undeclared", OpParams({{"b", 1.0}})),
                    Catch::Contains("does not take parameter 'b'"));
}

TEST_CASE("defaults read as the docs show them", "[catalogue]") {
  const auto text = [](ParamDefault fallback) {
    return default_text({"p", ParamKind::kNumber, std::move(fallback), any(), "p"});
  };
  CHECK(text(defaults_to(0.5)) == "0.5");
  CHECK(text(defaults_to(224.0 / 256.0)) == "0.875");
  CHECK(text(defaults_to({3.0 / 4.0, 4.0 / 3.0})) == "[0.75, 4/3]");
  CHECK(text(defaults_to({0.08, 1.0})) == "[0.08, 1]");
  CHECK(text(defaults_to(0.1 + 0.2)) == "0.30000000000000004");
  CHECK(text(defaults_to(2)) == "2");
  CHECK(text(defaults_to(false)) == "false");
  CHECK(text(defaults_to("float32")) == "float32");
  CHECK(text(required()) == "required");
  CHECK(text(when_absent("0 per channel")) == "0 per channel");
}
