// NativeLoader and NativeEpoch: ffcv::Loader and its epochs for Python.
//
// A batch leaves as one numpy array per output over the batch's own memory (no copy; handed over
// through DLPack, and torch.from_numpy makes tensors of them without a copy either). Every
// array of a batch holds one reference to the batch's lease, so the memory stays the batch's
// until the last array (or tensor made from it) is gone; the engine gives a held batch's slot
// new memory when it needs it (ffcv/loader.hpp), so keeping batches never stalls the loader and
// never sees a slot overwritten. The GIL is released while the loader opens its file, starts or
// stops an epoch, and waits for a batch; the workers never take it.
//
// Waits look for Ctrl-C every 100 ms (python_interrupts.hpp): next(), and opening a URL whose
// server does not answer, raise KeyboardInterrupt at once. One epoch serves one next() at a
// time, so two threads sharing an iterator get each batch once. An epoch, a loader with an epoch
// running and a batch belong to the process that made them: after fork() the child's next()
// raises, and the child leaves them alone (their threads are the parent's).

#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "bindings.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/steps/op_registry.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/util/errors.hpp"
#include "python_interrupts.hpp"
#include "python_values.hpp"

namespace ffcv::python {
namespace {

// One output as the package describes it: (name, field, decoder, operations, batch operations),
// a step being (name, {parameter: value}) and the decoder None for the field's default.
PipelineSpec pipeline_spec(const nb::handle& output) {
  using Step = std::tuple<std::string, nb::dict>;
  const auto [name, field, decoder, operations, batch_operations] =
      nb::cast<std::tuple<std::string, std::string, std::optional<Step>, std::vector<Step>,
                          std::vector<Step>>>(output);
  PipelineSpec spec;
  spec.name = name;
  spec.field = field;
  const auto params = [&](const Step& step, const char* kind) {
    return op_params(std::get<1>(step),
                     std::string(kind) + " '" + std::get<0>(step) + "' of output '" + name + "'");
  };
  const OpRegistry& registry = OpRegistry::global();
  if (decoder) {
    spec.decoder = registry.make_decoder(std::get<0>(*decoder), params(*decoder, "decoder"));
  }
  for (const Step& step : operations) {
    spec.operations.push_back(
        registry.make_operation(std::get<0>(step), params(step, "operation")));
  }
  for (const Step& step : batch_operations) {
    spec.batch_operations.push_back(
        registry.make_batch_operation(std::get<0>(step), params(step, "batch operation")));
  }
  return spec;
}

// Whether this is a child forked from the process `owner` (a getpid() of when it was made).
bool forked_from(pid_t owner) { return ::getpid() != owner; }

// Leaves `object` to the process: for what a forked child must not take apart (an epoch's
// threads, joined on destruction, are the parent's; its locks may be held by them).
template <typename T>
void abandon(T object) {
  new T(std::move(object));
}

// The lease of a batch handed to Python. A forked child that drops it leaves it alone.
struct BatchLease {
  explicit BatchLease(Batch held) : batch(std::move(held)) {}
  ~BatchLease() {
    if (forked_from(owner)) abandon(std::move(batch));
  }
  Batch batch;
  pid_t owner = ::getpid();
};

// A numpy array over `data` (of a batch whose lease `lease` holds), keeping one reference to it.
nb::object lease_array(const std::shared_ptr<BatchLease>& lease, const void* data,
                       const std::vector<std::uint64_t>& dims, const DType& dtype) {
  const std::vector<std::size_t> shape(dims.begin(), dims.end());
  nb::capsule owner(new std::shared_ptr<BatchLease>(lease), [](void* held) noexcept {
    delete static_cast<std::shared_ptr<BatchLease>*>(held);
  });
  return nb::cast(nb::ndarray<nb::numpy>(const_cast<void*>(data), shape.size(), shape.data(), owner,
                                         nullptr, dlpack_dtype(dtype)));
}

// The outputs of `batch` as numpy arrays over its memory, sharing one reference to its lease. A
// ragged output is a pair: (values, offsets [B + 1]) packed, (values [B, rows, ...], lengths [B])
// padded.
nb::list batch_arrays(Batch batch) {
  const auto leased = std::make_shared<BatchLease>(std::move(batch));
  const Batch* lease = &leased->batch;
  static const DType kIndexType = DType::parse("<i8");
  nb::list arrays;
  for (std::size_t i = 0; i < lease->num_outputs(); ++i) {
    const BatchTensor output = lease->output(i);
    nb::object values = lease_array(leased, output.data, output.shape(), output.state->dtype);
    if (!output.layout) {
      arrays.append(values);
    } else if (*output.layout == RaggedLayout::kPacked) {
      arrays.append(nb::make_tuple(
          values, lease_array(leased, output.offsets, {output.count + 1}, kIndexType)));
    } else {
      arrays.append(
          nb::make_tuple(values, lease_array(leased, output.lengths, {output.count}, kIndexType)));
    }
  }
  return arrays;
}

// The batch memory from Python: allocate(bytes) -> address and deallocate(address) (e.g. torch's
// pinned host memory for copies to a GPU). The engine calls them without its lock (from the
// thread that starts an epoch or asks for a batch, and from the one that ends a lease or an
// epoch); each call takes the GIL. Past the interpreter's end, memory is left to the process.
struct PythonMemory {
  nb::object allocate, deallocate;
  ~PythonMemory() {
    if (!nb::is_alive()) {
      allocate.release();
      deallocate.release();
      return;
    }
    nb::gil_scoped_acquire locked;
    allocate.reset();
    deallocate.reset();
  }
};

BatchAllocator python_allocator(nb::object allocate, nb::object deallocate) {
  auto memory =
      std::make_shared<PythonMemory>(PythonMemory{std::move(allocate), std::move(deallocate)});
  return {[memory](std::uint64_t bytes) -> void* {
            nb::gil_scoped_acquire locked;
            return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(memory->allocate(bytes)));
          },
          [memory](void* address) {
            if (!nb::is_alive()) return;
            nb::gil_scoped_acquire locked;
            memory->deallocate(reinterpret_cast<std::uintptr_t>(address));
          }};
}

nb::dict stats_dict(const LoaderStats& stats) {
  nb::dict out;
  out["batches"] = stats.batches;
  out["samples"] = stats.samples;
  out["wall_seconds"] = stats.wall_seconds;
  out["read_wait_seconds"] = stats.read_wait_seconds;
  out["process_seconds"] = stats.process_seconds;
  out["process_cpu_seconds"] = stats.process_cpu_seconds;
  out["ring_full_seconds"] = stats.ring_full_seconds;
  out["consumer_wait_seconds"] = stats.consumer_wait_seconds;
  out["workers"] = stats.workers;
  out["skipped_samples"] = stats.skipped_samples;
  return out;
}

// One epoch. next() waits without the GIL, in slices, running Python's signal handlers between
// them. Calls of next() from several threads take turns (each batch goes to one of them); close()
// from another thread stops the epoch at once, and a next() waiting meanwhile returns None. The
// figures of an epoch that ended (stats(), batches_done) stay readable after close().
class NativeEpoch {
 public:
  explicit NativeEpoch(EpochIterator iterator)
      : iterator_(std::make_shared<EpochIterator>(std::move(iterator))) {}
  ~NativeEpoch() {
    if (forked_from(owner_) && iterator_) abandon(std::move(iterator_));
  }
  NativeEpoch(const NativeEpoch&) = delete;
  NativeEpoch& operator=(const NativeEpoch&) = delete;

  std::optional<nb::list> next() {
    check_process();
    const std::shared_ptr<EpochIterator> iterator = iterator_;
    if (!iterator) return std::nullopt;
    std::unique_lock serving(serving_, std::defer_lock);
    wait_interruptibly([&] { return serving.try_lock_for(kSignalPoll); });
    wait_interruptibly([&] { return iterator->wait_ready(kSignalPoll); });
    std::optional<Batch> batch;
    try {
      nb::gil_scoped_release unlocked;
      batch = iterator->next();
    } catch (const Error&) {
      if (closed_.load()) return std::nullopt;  // close() on another thread stopped the epoch
      throw;
    }
    if (!batch) return std::nullopt;
    return batch_arrays(std::move(*batch));
  }

  bool ready() const {
    check_process();
    return !iterator_ || iterator_->ready();
  }
  std::uint64_t batches_done() const {
    check_process();
    return iterator_ ? iterator_->position().batches_done : final_position_.batches_done;
  }
  std::uint64_t num_batches() const { return num_batches_; }
  nb::dict stats() const {
    check_process();
    return stats_dict(iterator_ ? iterator_->stats() : final_stats_);
  }
  // The iterator while the epoch is open, for its loader to tell whether one runs.
  std::weak_ptr<EpochIterator> iterator() const { return iterator_; }

  // Stops and joins the workers, also while another thread waits in next(); batches already
  // handed out stay valid. In a forked child it leaves the epoch to the process instead.
  void close() {
    if (!iterator_) return;
    std::shared_ptr<EpochIterator> closing = std::move(iterator_);
    iterator_.reset();
    if (forked_from(owner_)) {
      abandon(std::move(closing));
      return;
    }
    final_stats_ = closing->stats();
    final_position_ = closing->position();
    closed_.store(true);
    nb::gil_scoped_release unlocked;
    closing->stop();  // wakes a next() waiting on another thread, which then lets go of it
    closing.reset();
  }

 private:
  void check_process() const {
    if (!forked_from(owner_)) return;
    throw Error("this epoch's iterator belongs to process " + std::to_string(owner_) +
                ", of which process " + std::to_string(::getpid()) +
                " is a fork: its worker threads are not in this process; make a new Loader "
                "in this process to read batches here");
  }

  std::shared_ptr<EpochIterator> iterator_;  // null once closed; changed with the GIL only
  std::uint64_t num_batches_ = iterator_->num_batches();
  std::timed_mutex serving_;  // held by the next() being served
  std::atomic<bool> closed_{false};
  LoaderStats final_stats_;
  LoaderPosition final_position_;
  pid_t owner_ = ::getpid();
};

// A .beton opened once: its fields, to plan the outputs against, then the loader over it.
class NativeFile {
 public:
  // Opens and validates the file, a path or a URL (with the settings' HTTP limits); Ctrl-C
  // while a server keeps it waiting raises KeyboardInterrupt.
  NativeFile(const std::string& location, const nb::dict& settings) : location_(location) {
    LoaderSettings values;
    apply_settings(settings, values);
    LoaderPlace place;
    place.location = location;
    LoaderOptions options = loader_options(values, place);
    const InterruptWatch watch;
    options.cache.http.cancelled = watch.hook();
    try {
      nb::gil_scoped_release unlocked;
      reader_ = std::make_shared<const Reader>(location, ReaderOptions{{}, options.cache.http});
    } catch (const std::exception&) {
      watch.raise_if_interrupted();
      throw;
    }
  }

  // (name, type name) of every field, in file order.
  nb::list fields() const {
    nb::list out;
    for (const NamedField& field : reader_->fields()) {
      out.append(nb::make_tuple(field.name, field.field->type_name()));
    }
    return out;
  }

  const std::string& location() const { return location_; }  // as given, a URL's user kept
  const std::shared_ptr<const Reader>& reader() const { return reader_; }

 private:
  std::string location_;
  std::shared_ptr<const Reader> reader_;
};

class NativeLoader {
 public:
  NativeLoader(const NativeFile& file, std::uint64_t batch_size, const nb::dict& settings,
               std::uint32_t rank, std::uint32_t world_size, int cores,
               std::optional<std::vector<std::uint64_t>> indices, const nb::list& outputs,
               std::optional<std::pair<nb::object, nb::object>> memory) {
    if (batch_size == 0) throw ConfigError("batch_size must be at least 1");
    LoaderSettings values;
    apply_settings(settings, values);
    LoaderPlace place;
    place.location = file.location();
    place.batch_size = batch_size;
    place.rank = rank;
    place.world_size = world_size;
    place.cores = cores;
    LoaderOptions options = loader_options(values, place);
    options.order.indices = std::move(indices);
    if (memory) options.allocator = python_allocator(memory->first, memory->second);
    std::vector<PipelineSpec> specs;
    for (nb::handle output : outputs) specs.push_back(pipeline_spec(output));
    const InterruptWatch watch;  // the process cache opens a URL again
    options.cache.http.cancelled = watch.hook();
    try {
      nb::gil_scoped_release unlocked;
      loader_ = std::make_unique<Loader>(file.location(), file.reader(), std::move(specs),
                                         std::move(options));
    } catch (const std::exception&) {
      watch.raise_if_interrupted();
      throw;
    }
  }
  // A forked child leaves a loader whose epoch was running at the fork to the process.
  ~NativeLoader() {
    if (forked_from(owner_) && !running_.expired()) abandon(std::move(loader_));
  }
  NativeLoader(const NativeLoader&) = delete;
  NativeLoader& operator=(const NativeLoader&) = delete;

  NativeEpoch* epoch(std::uint64_t epoch, std::uint64_t first_batch) {
    if (forked_from(owner_) && !running_.expired()) {
      throw Error("this loader's epoch was running in process " + std::to_string(owner_) +
                  " when process " + std::to_string(::getpid()) +
                  " forked from it: its threads are not here; make a new Loader in this process");
    }
    std::unique_ptr<NativeEpoch> started;
    {
      nb::gil_scoped_release unlocked;
      started = std::make_unique<NativeEpoch>(loader_->epoch(epoch, first_batch));
    }
    running_ = started->iterator();
    return started.release();
  }

  std::uint64_t batches_per_epoch() const { return loader_->batches_per_epoch(); }
  std::uint64_t num_samples() const { return loader_->reader().num_samples(); }
  std::uint64_t window_pages() const { return loader_->options().order.window_pages; }
  int num_workers() const { return loader_->options().num_workers; }

  // (name, numpy typestr, per-sample shape, layout) of every output, in order; a ragged
  // output's layout is "packed" or "padded" and its shape that of one row, a fixed one's None.
  nb::list outputs() const {
    nb::list out;
    const auto& layouts = loader_->output_layouts();
    for (std::size_t i = 0; i < loader_->outputs().size(); ++i) {
      const auto& [name, state] = loader_->outputs()[i];
      nb::object layout = nb::none();
      if (layouts[i]) layout = nb::str(ragged_layout_name(*layouts[i]));
      out.append(
          nb::make_tuple(name, state.dtype.typestr(), nb::tuple(nb::cast(state.shape)), layout));
    }
    return out;
  }

  void set_indices(std::optional<std::vector<std::uint64_t>> indices) {
    loader_->set_indices(std::move(indices));
  }

  // Loader::sample_geometry as (scale_x, shift_x, scale_y, shift_y, width, height) per map.
  nb::list sample_geometry(const std::string& output, std::uint64_t epoch, std::uint64_t index) {
    std::vector<PlaneMap> maps;
    {
      nb::gil_scoped_release unlocked;
      maps = loader_->sample_geometry(output, epoch, index);
    }
    nb::list out;
    for (const PlaneMap& map : maps) {
      out.append(nb::make_tuple(map.scale_x, map.shift_x, map.scale_y, map.shift_y, map.width,
                                map.height));
    }
    return out;
  }

 private:
  std::unique_ptr<Loader> loader_;
  std::weak_ptr<EpochIterator> running_;  // the newest epoch's, while it is open
  pid_t owner_ = ::getpid();
};

}  // namespace

void bind_loader(nb::module_& module) {
  nb::class_<NativeFile>(module, "NativeFile", "A .beton file opened and validated once.")
      .def(nb::init<const std::string&, const nb::dict&>(), nb::arg("location"),
           nb::arg("settings"))
      .def("fields", &NativeFile::fields, "(name, type) of each field, in file order.");
  nb::class_<NativeEpoch>(module, "NativeEpoch",
                          "One epoch of a NativeLoader: its workers and batches.")
      .def("next", &NativeEpoch::next,
           "The next batch as one numpy array per output (over the batch's memory), or None at the "
           "end of the epoch (or once close() stopped it). Threads calling it take turns.")
      .def("ready", &NativeEpoch::ready, "Whether next() would return at once.")
      .def("close", &NativeEpoch::close,
           "Stops the workers, also under a next() waiting on another thread; batches handed out "
           "stay valid, and so do stats() and batches_done.")
      .def_prop_ro("batches_done", &NativeEpoch::batches_done)
      .def_prop_ro("num_batches", &NativeEpoch::num_batches)
      .def("stats", &NativeEpoch::stats,
           "Seconds per stage of this epoch, summed over threads; after close(), the figures at "
           "the close.");
  nb::class_<NativeLoader>(module, "NativeLoader", "ffcv::Loader: a .beton file through pipelines.")
      .def(nb::init<const NativeFile&, std::uint64_t, const nb::dict&, std::uint32_t, std::uint32_t,
                    int, std::optional<std::vector<std::uint64_t>>, const nb::list&,
                    std::optional<std::pair<nb::object, nb::object>>>(),
           nb::arg("file"), nb::arg("batch_size"), nb::arg("settings"), nb::arg("rank"),
           nb::arg("world_size"), nb::arg("cores"), nb::arg("indices").none(), nb::arg("outputs"),
           nb::arg("memory").none() = nb::none(),
           "memory: (allocate(bytes) -> address, deallocate(address)) for the batch memory; "
           "None: the loader's own")
      .def("epoch", &NativeLoader::epoch, nb::arg("epoch"), nb::arg("first_batch") = 0,
           nb::keep_alive<0, 1>(), nb::rv_policy::take_ownership,
           "Starts an epoch (which keeps its loader alive); an epoch of this loader still "
           "running is stopped first.")
      .def_prop_ro("batches_per_epoch", &NativeLoader::batches_per_epoch)
      .def_prop_ro("num_samples", &NativeLoader::num_samples)
      .def_prop_ro("window_pages", &NativeLoader::window_pages)
      .def_prop_ro("num_workers", &NativeLoader::num_workers)
      .def("outputs", &NativeLoader::outputs)
      .def("set_indices", &NativeLoader::set_indices, nb::arg("indices").none())
      .def("sample_geometry", &NativeLoader::sample_geometry, nb::arg("output"), nb::arg("epoch"),
           nb::arg("index"),
           "Where sample `index`'s pixels of image output `output` go in epoch `epoch`: one "
           "(scale_x, shift_x, scale_y, shift_y, width, height) per pixel-moving step.");
}

}  // namespace ffcv::python
