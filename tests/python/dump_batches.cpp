// The C++ loader's batches as raw bytes, for the Python package's tests to compare against:
//
//   ffcv_dump_batches FILE OUT_DIR --batch-size N [--set NAME=VALUE]...
//       (--output NAME=FIELD [--decoder SPEC] [--op SPEC]... [--batch-op SPEC]...)...
//
// Settings are the loader-settings table's (ffcv/settings/loader_settings.hpp), steps are
// NAME[:key=value,...] as the CLI's --op takes them. Writes OUT_DIR/NAME.bin per output: every
// batch of epoch 0, one after the other; prints "NAME BATCHES" per output.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "ffcv/loader.hpp"
#include "ffcv/settings/loader_settings.hpp"
#include "ffcv/steps/op_registry.hpp"

namespace {

using namespace ffcv;

std::pair<std::string, std::string> split_pair(const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos) throw ConfigError("expected NAME=VALUE, got '" + text + "'");
  return {text.substr(0, equals), text.substr(equals + 1)};
}

void set_named(LoaderSettings& settings, const std::string& text) {
  const auto [name, value] = split_pair(text);
  for (const SettingRow& row : loader_setting_rows(settings)) {
    if (row.name == name) return set_setting(row, value);
  }
  throw ConfigError("unknown setting '" + name + "'");
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: ffcv_dump_batches FILE OUT_DIR --batch-size N [--set K=V]... "
                 "(--output NAME=FIELD [--decoder S] [--op S]... [--batch-op S]...)...\n";
    return 2;
  }
  const std::string file = argv[1], out_dir = argv[2];
  LoaderSettings settings;
  LoaderPlace place;
  place.location = file;
  std::vector<PipelineSpec> outputs;
  const OpRegistry& registry = OpRegistry::global();
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--batch-size") {
      place.batch_size = std::stoull(value);
    } else if (flag == "--set") {
      set_named(settings, value);
    } else if (flag == "--output") {
      const auto [name, field] = split_pair(value);
      outputs.push_back({name, field, nullptr, {}});
    } else if (outputs.empty()) {
      throw ConfigError(flag + " before any --output");
    } else {
      const OpSpec step = parse_op_spec(value);
      if (flag == "--decoder") {
        outputs.back().decoder = registry.make_decoder(step.name, step.params);
      } else if (flag == "--op") {
        outputs.back().operations.push_back(registry.make_operation(step.name, step.params));
      } else if (flag == "--batch-op") {
        outputs.back().batch_operations.push_back(
            registry.make_batch_operation(step.name, step.params));
      } else {
        throw ConfigError("unknown option " + flag);
      }
    }
  }
  Loader loader(file, outputs, loader_options(settings, place));
  std::vector<std::ofstream> files;
  for (const PipelineSpec& output : outputs) {
    files.emplace_back(out_dir + "/" + output.name + ".bin", std::ios::binary);
  }
  std::uint64_t batches = 0;
  EpochIterator it = loader.epoch(0);
  while (auto batch = it.next()) {
    for (std::size_t o = 0; o < batch->num_outputs(); ++o) {
      const BatchTensor t = batch->output(o);
      files[o].write(reinterpret_cast<const char*>(t.data),
                     static_cast<std::streamsize>(t.byte_size()));
    }
    ++batches;
  }
  for (const PipelineSpec& output : outputs) std::cout << output.name << ' ' << batches << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "ffcv_dump_batches: " << error.what() << '\n';
    return 1;
  }
}
