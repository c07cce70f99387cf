// NativeWriter: ffcv::DatasetWriter for Python, reading samples through a Python callable.
//
// The writer's worker threads take the GIL only to call the sample callable and copy what it
// returns; decoding, resizing and JPEG encoding run without it, in parallel. The calling thread
// waits without the GIL and takes it about ten times a second to report progress and to notice
// Ctrl-C, which stops the write (the partial file is removed, as on any error).

#include <optional>

#include "bindings.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/util/errors.hpp"
#include "python_values.hpp"

namespace ffcv::python {
namespace {

// One field as the package describes it: (name, kind, {parameter: value}).
struct FieldSpec {
  std::string name, kind;
  FieldPtr field;
};

// The parameter `key` of a field (the package always gives every one).
nb::object item(const nb::dict& params, const char* key) {
  PyObject* value = PyDict_GetItemString(params.ptr(), key);
  if (value == nullptr) throw ConfigError(std::string("missing field parameter '") + key + "'");
  return nb::borrow(value);
}

FieldPtr rgb_image_field(const nb::dict& params) {
  RgbImageOptions options;
  options.write_mode = parse_image_write_mode(nb::cast<std::string>(item(params, "write_mode")));
  if (!item(params, "max_resolution").is_none()) {
    options.max_resolution = nb::cast<int>(item(params, "max_resolution"));
  }
  options.jpeg_quality = nb::cast<int>(item(params, "jpeg_quality"));
  options.compress_probability = nb::cast<double>(item(params, "compress_probability"));
  if (!item(params, "smart_threshold").is_none()) {
    options.smart_threshold = nb::cast<std::uint64_t>(item(params, "smart_threshold"));
  }
  options.same_as_ffcv = nb::cast<bool>(item(params, "same_as_ffcv"));
  return std::make_shared<RgbImageField>(options);
}

FieldSpec field_spec(nb::handle entry) {
  const auto [name, kind, params] = nb::cast<std::tuple<std::string, std::string, nb::dict>>(entry);
  FieldSpec spec{name, kind, nullptr};
  if (spec.kind == "rgb_image") {
    spec.field = rgb_image_field(params);
  } else if (spec.kind == "int") {
    spec.field = std::make_shared<IntField>();
  } else if (spec.kind == "float") {
    spec.field = std::make_shared<FloatField>();
  } else if (spec.kind == "bytes") {
    spec.field = std::make_shared<BytesField>();
  } else if (spec.kind == "json") {
    spec.field = std::make_shared<JsonField>();
  } else if (spec.kind == "ndarray") {
    spec.field =
        std::make_shared<NdArrayField>(DType::parse(nb::cast<std::string>(item(params, "dtype"))),
                                       nb::cast<std::vector<std::uint64_t>>(item(params, "shape")));
  } else if (spec.kind == "ragged_ndarray") {
    spec.field = std::make_shared<RaggedNdArrayField>(
        DType::parse(nb::cast<std::string>(item(params, "dtype"))),
        nb::cast<std::vector<std::uint64_t>>(item(params, "row_shape")));
  } else {
    throw ConfigError("field '" + spec.name + "': unknown kind '" + spec.kind + "'");
  }
  return spec;
}

// Samples from `get_sample(i)`, a tuple with one value per field.
class PythonSamples final : public SampleSource {
 public:
  PythonSamples(nb::callable get_sample, std::uint64_t count, std::vector<FieldSpec> fields)
      : get_sample_(std::move(get_sample)), count_(count), fields_(std::move(fields)) {}

  std::uint64_t size() const override { return count_; }

  std::vector<FieldValue> load(std::uint64_t index) const override {
    nb::gil_scoped_acquire locked;
    try {
      const nb::object sample = get_sample_(index);
      const nb::tuple values = nb::cast<nb::tuple>(sample);
      if (values.size() != fields_.size()) {
        throw EncodeError("the dataset gave " + std::to_string(values.size()) + " values for " +
                          std::to_string(fields_.size()) + " fields");
      }
      std::vector<FieldValue> out;
      for (std::size_t f = 0; f < fields_.size(); ++f) {
        out.push_back(field_value(values[f], fields_[f].kind, fields_[f].name));
      }
      return out;
    } catch (nb::python_error& error) {
      // The first exception is kept (with the GIL, as Python objects need) for write_samples to
      // raise again; the writer carries its text.
      const std::string text = error.what();
      if (!first_error_) {
        first_error_.emplace(std::move(error));
        first_error_index_ = index;
      }
      throw EncodeError(text);
    } catch (const nb::cast_error&) {
      throw EncodeError("the dataset's item is not a tuple of one value per field");
    }
  }

  std::string describe(std::uint64_t index) const override {
    return "dataset[" + std::to_string(index) + "]";
  }

  // With the GIL, after a failed write: raises the first exception a sample raised, noting the
  // sample, so that the caller sees its own exception type; returns when there was none.
  void raise_first_error() {
    if (!first_error_) return;
    nb::python_error error = std::move(*first_error_);
    first_error_.reset();
    const nb::handle value = error.value();
    if (nb::hasattr(value, "add_note")) {
      value.attr("add_note")("while writing sample " + std::to_string(first_error_index_) +
                             " (dataset[" + std::to_string(first_error_index_) + "])");
    }
    throw error;
  }

 private:
  nb::callable get_sample_;
  std::uint64_t count_;
  std::vector<FieldSpec> fields_;
  mutable std::optional<nb::python_error> first_error_;  // only touched with the GIL
  mutable std::uint64_t first_error_index_ = 0;
};

nb::dict write_samples(const std::string& path, const nb::list& field_list, nb::callable get_sample,
                       std::uint64_t count, int num_workers, std::uint64_t page_size,
                       std::uint64_t seed, bool shuffle_indices,
                       std::optional<nb::callable> on_progress) {
  std::vector<FieldSpec> specs;
  std::vector<NamedField> fields;
  for (nb::handle entry : field_list) {
    specs.push_back(field_spec(entry));
    fields.push_back({specs.back().name, specs.back().field});
  }
  WriterOptions options;
  options.num_workers = num_workers;
  options.page_size = page_size;
  options.seed = seed;
  options.shuffle_indices = shuffle_indices;
  options.on_progress = [&](std::uint64_t done, std::uint64_t total) {
    nb::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    if (on_progress) (*on_progress)(done, total);
  };
  DatasetWriter writer(path, std::move(fields), options);
  PythonSamples samples(std::move(get_sample), count, std::move(specs));
  WriteSummary summary;
  try {
    nb::gil_scoped_release unlocked;
    summary = writer.write(samples);
  } catch (const EncodeError&) {
    samples.raise_first_error();
    throw;
  }
  nb::dict out;
  out["num_samples"] = summary.num_samples;
  out["page_size"] = summary.page_size;
  out["num_pages"] = summary.num_pages;
  out["heap_bytes"] = summary.heap_bytes;
  out["file_size"] = summary.file_size;
  out["seconds"] = summary.seconds;
  return out;
}

}  // namespace

void bind_writer(nb::module_& module) {
  module.def("write_samples", &write_samples, nb::arg("path"), nb::arg("fields"),
             nb::arg("get_sample"), nb::arg("count"), nb::arg("num_workers"), nb::arg("page_size"),
             nb::arg("seed"), nb::arg("shuffle_indices"), nb::arg("on_progress").none(),
             "Writes `count` samples, get_sample(i) giving sample i as a tuple of one value per "
             "field; fields are (name, kind, parameters). Returns the write's summary.");
}

}  // namespace ffcv::python
