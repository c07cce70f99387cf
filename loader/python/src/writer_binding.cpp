// NativeWriter: ffcv::DatasetWriter for Python, reading samples through a Python callable.
//
// The writer's worker threads take the GIL only to call the sample callable and copy what it
// returns, one call at a time in row order (as a plain loop over the dataset); decoding, resizing
// and JPEG encoding run without it, in parallel. The write runs on a thread of its own; the calling
// thread waits without the GIL and takes it ten times a second to notice Ctrl-C, which stops the
// write and raises KeyboardInterrupt, the partial file removed (as on any error), within about a
// second even while the dataset's __getitem__ blocks.

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "bindings.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/bytes_fields.hpp"
#include "ffcv/fields/ndarray_field.hpp"
#include "ffcv/fields/ragged_ndarray_field.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/format/beton_file.hpp"
#include "ffcv/util/errors.hpp"
#include "python_interrupts.hpp"
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
  } else if (spec.kind == "ndarray" || spec.kind == "torch_tensor") {
    spec.field = std::make_shared<NdArrayField>(
        DType::parse(nb::cast<std::string>(item(params, "dtype"))),
        nb::cast<std::vector<std::uint64_t>>(item(params, "shape")),
        spec.kind == "ndarray" ? NdArrayField::kTypeId : NdArrayField::kTorchTensorTypeId);
  } else if (spec.kind == "ragged_ndarray") {
    spec.field = std::make_shared<RaggedNdArrayField>(
        DType::parse(nb::cast<std::string>(item(params, "dtype"))),
        nb::cast<std::vector<std::uint64_t>>(item(params, "row_shape")));
  } else {
    throw ConfigError("field '" + spec.name + "': unknown kind '" + spec.kind + "'");
  }
  return spec;
}

// Samples from `get_sample(i)`, a tuple with one value per field. Sample i is the dataset's item
// `dataset_indices[i]` (i when they are not given), as errors name it.
class PythonSamples final : public SampleSource {
 public:
  PythonSamples(nb::callable get_sample, std::uint64_t count, std::vector<FieldSpec> fields,
                std::vector<std::int64_t> dataset_indices)
      : get_sample_(std::move(get_sample)),
        count_(count),
        fields_(std::move(fields)),
        dataset_indices_(std::move(dataset_indices)) {}

  std::uint64_t size() const override { return count_; }

  std::vector<FieldValue> load(std::uint64_t index) const override {
    if (cancelled->load()) throw IoError(describe(index), "read", "the write was interrupted");
    nb::gil_scoped_acquire locked;
    try {
      const nb::object sample = get_sample_(index);
      if (!nb::isinstance<nb::tuple>(sample)) {
        throw EncodeError("the dataset gave a " +
                          nb::cast<std::string>(nb::str(sample.type().attr("__name__"))) +
                          ", not a tuple of one value per field");
      }
      const nb::tuple values = nb::borrow<nb::tuple>(sample);
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
      throw EncodeError(describe(index) + ": a value has a type its field cannot take");
    }
  }

  std::string describe(std::uint64_t index) const override {
    return "dataset[" + std::to_string(dataset_index(index)) + "]";
  }

  // __getitem__ is called as a plain loop calls it: one call at a time, in row order, so that a
  // dataset that seeds or draws from numpy's global generator gives each row what the loop gives
  // (the GIL alone lets another thread's call run between a seed and its draw).
  bool loads_one_at_a_time() const override { return true; }

  // Set when the caller stops the write: later samples fail at once.
  const std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  // With the GIL, after a failed write: raises the first exception a sample raised, noting the
  // sample, so that the caller sees its own exception type; returns when there was none.
  void raise_first_error() {
    if (!first_error_) return;
    nb::python_error error = std::move(*first_error_);
    first_error_.reset();
    const nb::handle value = error.value();
    if (nb::hasattr(value, "add_note")) {
      value.attr("add_note")("while writing sample " + std::to_string(first_error_index_) + " (" +
                             describe(first_error_index_) + ")");
    }
    throw error;
  }

 private:
  std::int64_t dataset_index(std::uint64_t index) const {
    return index < dataset_indices_.size() ? dataset_indices_[index]
                                           : static_cast<std::int64_t>(index);
  }

  nb::callable get_sample_;
  std::uint64_t count_;
  std::vector<FieldSpec> fields_;
  std::vector<std::int64_t> dataset_indices_;
  mutable std::optional<nb::python_error> first_error_;  // only touched with the GIL
  mutable std::uint64_t first_error_index_ = 0;
};

// A write on a thread of its own, owning what it uses, so that the calling thread can wait for it
// in slices and notice Ctrl-C: the writer takes samples in order, so one __getitem__ that blocks
// holds the whole write.
struct WriteJob {
  std::shared_ptr<PythonSamples> samples;
  std::optional<DatasetWriter> writer;
  std::mutex mutex;
  std::condition_variable ended;
  bool done = false;       // the fields below are set; under mutex
  bool abandoned = false;  // the caller stopped waiting (Ctrl-C, then kStopGrace); under mutex
  WriteSummary summary;
  std::exception_ptr error;
};

// How long a stopped write may take to end (its workers finish the samples they hold) before the
// caller stops waiting for it: KeyboardInterrupt is raised then, the temporary file removed, and
// the write ends by itself once the dataset's calls return.
constexpr std::chrono::seconds kStopGrace{1};

// Removes the temporaries of `path` that this process has open (AtomicFile names them
// "<dir>/.<name>.tmp-XXXXXX"), of a write left to end by itself.
void remove_own_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path given(path);
  fs::path folder = given.parent_path().empty() ? fs::path(".") : given.parent_path();
  folder = fs::canonical(folder, error);
  if (error) return;
  const std::string prefix = (folder / ("." + given.filename().string() + ".tmp-")).string();
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc/self/fd", error)) {
    std::error_code link_error;
    const std::string target = fs::read_symlink(entry.path(), link_error).string();
    if (link_error || target.rfind(prefix, 0) != 0) continue;
    if (target.find('/', prefix.size()) != std::string::npos) continue;
    fs::remove(target, link_error);
  }
}

// Runs the job's write on a thread of its own and waits for it, running Python's signal handlers
// every 100 ms. A handler that raises (Ctrl-C) stops the write; its error is raised once the
// write ended, or after kStopGrace with the temporary removed.
WriteSummary run_write(const std::shared_ptr<WriteJob>& job, const std::string& path) {
  // The write's thread never runs Python's code to drop the job's Python objects (no GIL: it may
  // run while the interpreter ends, where taking the GIL ends the thread by force). While the
  // caller waits, it holds the job, and the thread lets go of its own share before it says done,
  // so the caller's is the last; a job the caller abandoned is left to the process's end.
  std::thread([job = job]() mutable {
    WriteSummary summary;
    std::exception_ptr error;
    try {
      summary = job->writer->write(*job->samples);
    } catch (...) {
      error = std::current_exception();
    }
    WriteJob* const shared = job.get();
    std::unique_lock lock(shared->mutex);
    shared->summary = summary;
    shared->error = std::move(error);  // none left here to free without the GIL
    if (shared->abandoned) {
      new std::shared_ptr<WriteJob>(std::move(job));
    } else {
      job.reset();  // the caller, still waiting, holds the job
    }
    shared->done = true;
    shared->ended.notify_all();  // under the lock: the caller frees the job once it has it
  }).detach();

  std::optional<nb::python_error> interrupted;
  std::chrono::steady_clock::time_point give_up;
  for (;;) {
    bool done = false;
    {
      nb::gil_scoped_release unlocked;
      std::unique_lock lock(job->mutex);
      done = job->ended.wait_for(lock, kSignalPoll, [&] { return job->done; });
    }
    if (done) break;
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted.emplace();
      job->samples->cancelled->store(true);
      give_up = std::chrono::steady_clock::now() + kStopGrace;
    }
    if (interrupted && std::chrono::steady_clock::now() >= give_up) {
      {
        const std::lock_guard lock(job->mutex);
        if (!job->done) job->abandoned = true;
      }
      remove_own_temporaries(path);
      throw std::move(*interrupted);
    }
  }
  if (interrupted) throw std::move(*interrupted);
  if (job->error) {
    try {
      std::rethrow_exception(job->error);
    } catch (const EncodeError&) {
      job->samples->raise_first_error();
      throw;
    }
  }
  return job->summary;
}

nb::dict write_samples(const std::string& path, const nb::list& field_list, nb::callable get_sample,
                       std::uint64_t count, int num_workers, std::uint64_t page_size,
                       std::uint64_t seed, bool shuffle_indices,
                       std::optional<nb::callable> on_progress,
                       std::optional<std::vector<std::int64_t>> dataset_indices) {
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
  auto job = std::make_shared<WriteJob>();
  job->samples =
      std::make_shared<PythonSamples>(std::move(get_sample), count, std::move(specs),
                                      dataset_indices.value_or(std::vector<std::int64_t>{}));
  // On the write's thread; the callable is shared, so that copies of the options leave its
  // reference count alone.
  const auto progress = std::make_shared<std::optional<nb::callable>>(std::move(on_progress));
  options.on_progress = [progress, cancelled = job->samples->cancelled](std::uint64_t done,
                                                                        std::uint64_t total) {
    if (cancelled->load()) throw Error("the write was interrupted");
    if (!*progress) return;
    nb::gil_scoped_acquire locked;
    (**progress)(done, total);
  };
  job->writer.emplace(path, std::move(fields), options);
  const WriteSummary summary = run_write(job, path);
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
             nb::arg("dataset_indices").none() = nb::none(),
             "Writes `count` samples, get_sample(i) giving sample i as a tuple of one value per "
             "field; fields are (name, kind, parameters); errors name sample i as "
             "dataset[dataset_indices[i]] (dataset[i] without them). Returns the write's "
             "summary.");
  module.def("replaceable_without_force", &replaceable_without_force, nb::arg("path"),
             "Whether a write may replace `path` without force, as `ffcv write` does: a .beton "
             "file (its header) or an empty file.");
}

}  // namespace ffcv::python
