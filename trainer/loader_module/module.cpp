// dl_loader._core, the Python extension over dl::data's loader (python/dl_loader is its Python
// surface). Batches leave as buffer objects over the loader's own pooled memory, which torch
// wraps without a copy (torch.frombuffer); the buffer goes back to the pool when the last tensor
// over it is gone. The GIL is released while the loader waits for or assembles a batch and while
// a batch is converted, and Ctrl-C is noticed within 100 ms of waiting. The data layer's one-line
// errors become Python exceptions: FileNotFoundError (missing data), dl_loader.DataError (bad
// data), dl_loader.SplitError (no such part), ValueError (bad options; the other two are ones).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/crop_plan.h"
#include "data/data_error.h"
#include "data/shard_order.h"
#include "data/skip_reason.h"
#include "data/transform.h"
#include "loader_module/batch_convert.h"
#include "loader_module/dataset_loader.h"
#include "loader_module/pinned_host.h"

namespace py = pybind11;

namespace dl::loader_module {
namespace {

// One of a batch's two arrays (images or labels) as a flat, writable buffer; it keeps the batch,
// and so its pooled block, alive.
struct BatchBuffer {
  std::shared_ptr<data::Batch> batch;
  void* data = nullptr;
  py::ssize_t count = 0;
  py::ssize_t itemsize = 1;
  std::string format;
};

py::dict skip_dict(const data::SkipCounts& counts) {
  py::dict out;
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    out[skip_reason_name(static_cast<data::SkipReason>(r))] = counts[r];
  }
  return out;
}

// Python's pending signal (Ctrl-C) as an exception out of the loader's wait.
void check_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

std::unique_ptr<DatasetLoader> make_loader(const py::kwargs& kw) {
  DatasetLoaderOptions o;
  o.location = kw["location"].cast<std::string>();
  o.split = kw["split"].cast<std::string>();
  o.augment = kw["augment"].cast<bool>();
  o.image_size = kw["image_size"].cast<int>();
  o.batch_size = kw["batch_size"].cast<int>();
  o.workers = kw["workers"].cast<int>();
  o.prefetch_per_worker = kw["prefetch"].cast<int>();
  o.drop_last = kw["drop_last"].cast<bool>();
  o.seed = kw["seed"].cast<std::uint64_t>();
  o.max_pixels = kw["max_pixels"].cast<std::int64_t>();
  o.read_ahead_bytes = kw["read_ahead_mb"].cast<std::uint64_t>() << 20;
  o.entropy_index_bytes = kw["jpeg_index_mb"].cast<std::size_t>() << 20;
  o.scale_min = kw["scale_min"].cast<float>();
  o.scale_max = kw["scale_max"].cast<float>();
  o.ratio_min = kw["ratio_min"].cast<float>();
  o.ratio_max = kw["ratio_max"].cast<float>();
  o.flip_probability = kw["flip"].cast<float>();
  o.eval_crop_fraction = kw["crop_fraction"].cast<float>();
  o.scaled_decode = kw["scaled_decode"].cast<bool>();
  if (const std::string cudart = kw["cudart"].cast<std::string>(); !cudart.empty()) {
    std::string why;
    std::optional<PinnedHost> host = pinned_host(cudart, &why);
    if (!host) throw std::invalid_argument("pin_memory: " + why);
    o.allocate = std::move(host->allocate);
    o.release = std::move(host->release);
  }
  o.poll = check_signals;
  py::object warn = kw["warn"];
  if (!warn.is_none()) {
    o.warn = [warn](const std::string& line) {
      py::gil_scoped_acquire gil;
      warn(line);
    };
  }
  py::gil_scoped_release nogil;  // listing a folder of a million files takes a while
  return std::make_unique<DatasetLoader>(std::move(o));
}

py::object next_batch(DatasetLoader& loader) {
  std::optional<data::Batch> batch;
  {
    py::gil_scoped_release nogil;
    batch = loader.next();
  }
  if (!batch) return py::none();
  auto shared = std::make_shared<data::Batch>(std::move(*batch));
  const data::ImageShape shape = shared->shape();
  BatchBuffer images{shared, shared->images(), static_cast<py::ssize_t>(shared->image_bytes()), 1,
                     "B"};
  BatchBuffer labels{shared, shared->labels(), static_cast<py::ssize_t>(shared->n()),
                     sizeof(std::int64_t), py::format_descriptor<std::int64_t>::format()};
  py::object floats = py::none();
  if (shared->extra() != nullptr) {
    floats = py::cast(BatchBuffer{shared, shared->extra(),
                                  static_cast<py::ssize_t>(shared->image_bytes()), sizeof(float),
                                  py::format_descriptor<float>::format()});
  }
  return py::make_tuple(images, labels, shared->n(),
                        py::make_tuple(shape.channels, shape.height, shape.width), shared->index(),
                        skip_dict(shared->skip_counts()), floats);
}

void channels_last_into(const BatchBuffer& images, std::int64_t n, py::tuple shape_chw,
                        std::uintptr_t out) {
  const data::ImageShape shape{shape_chw[0].cast<int>(), shape_chw[1].cast<int>(),
                               shape_chw[2].cast<int>()};
  if (static_cast<std::size_t>(n) * shape.bytes() > static_cast<std::size_t>(images.count)) {
    throw std::invalid_argument("channels_last: the batch holds fewer images than asked for");
  }
  py::gil_scoped_release nogil;
  to_channels_last(static_cast<const std::uint8_t*>(images.data), n, shape,
                   reinterpret_cast<std::uint8_t*>(out));
}

py::list failures(const DatasetLoader& loader) {
  py::list out;
  for (const data::SkippedFile& f : loader.failures()) {
    out.append(py::make_tuple(f.index, f.path, skip_reason_name(f.reason), f.detail));
  }
  return out;
}

// dl-train's line for skipped samples: "2 undecodable (a.jpg, b.jpg), 1 empty (c.jpg)", with the
// files named where `name_files`. `counts` by reason name, as skip_dict gives them.
std::string describe(const DatasetLoader& loader, const py::dict& counts, bool name_files) {
  data::SkipCounts c{};
  for (std::size_t r = 0; r < data::kSkipReasons; ++r) {
    const char* name = skip_reason_name(static_cast<data::SkipReason>(r));
    if (counts.contains(name)) c[r] = counts[name].cast<std::int64_t>();
  }
  return data::describe_skips(c, name_files ? loader.failures() : std::vector<data::SkippedFile>{});
}

// The transforms' geometry and pixels alone, for the tests that hold them to torchvision's.
py::list plan_train_crops(int height, int width, int count, std::uint32_t seed, float scale_min,
                          float scale_max, float ratio_min, float ratio_max) {
  data::Transform t;
  t.scale_min = scale_min;
  t.scale_max = scale_max;
  t.ratio_min = ratio_min;
  t.ratio_max = ratio_max;
  std::mt19937 rng(seed);
  py::list out;
  for (int i = 0; i < count; ++i) {
    const data::TrainCrop c = data::plan_train_crop(height, width, t, rng);
    out.append(py::make_tuple(c.top, c.left, c.height, c.width, c.flip));
  }
  return out;
}

// `rgb`: an H x W x 3 uint8 image (C order); the crop at (top, left) of crop_height x crop_width,
// resized to size x size and flipped when asked, as CHW bytes.
py::bytes resized_crop(const py::buffer& rgb, int top, int left, int crop_height, int crop_width,
                       bool flip, int size) {
  const py::buffer_info info = rgb.request();
  if (info.ndim != 3 || info.shape[2] != 3 || info.itemsize != 1 || info.strides[2] != 1 ||
      info.strides[1] != 3) {
    throw std::invalid_argument("resized_crop: expected a C-ordered H x W x 3 uint8 image");
  }
  if (top < 0 || left < 0 || crop_height < 1 || crop_width < 1 ||
      top + crop_height > info.shape[0] || left + crop_width > info.shape[1] || size < 1) {
    throw std::invalid_argument("resized_crop: the crop is not inside the image");
  }
  data::Transform t;
  t.out = {3, size, size};
  t.train = true;
  const data::TrainCrop crop{top, left, crop_height, crop_width, flip};
  std::string out(t.out.bytes(), '\0');
  const auto* base = static_cast<const std::uint8_t*>(info.ptr);
  const auto stride = static_cast<std::size_t>(info.strides[0]);
  data::transform_planned_crop(
      base + static_cast<std::size_t>(top) * stride + static_cast<std::size_t>(left) * 3, stride, 3,
      crop, t, reinterpret_cast<std::uint8_t*>(out.data()));
  return py::bytes(out);
}

}  // namespace
}  // namespace dl::loader_module

namespace {

// The module's exceptions: dl-train's one-line errors as Python's (a missing folder is a
// FileNotFoundError, a malformed data set a DataError, a missing part a SplitError).
void bind_exceptions(py::module_& m) {
  using namespace dl::loader_module;
  static py::exception<dl::data::DataError> data_error(m, "DataError", PyExc_ValueError);
  static py::exception<MissingPart> split_error(m, "SplitError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dl::data::MissingData& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const dl::data::DataError& e) {
      data_error(e.what());
    } catch (const MissingPart& e) {
      split_error(e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::logic_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

// The Loader class over DatasetLoader, and the buffer its batches are handed over in.
void bind_loader(py::module_& m) {
  using namespace dl::loader_module;
  py::class_<BatchBuffer>(m, "Buffer", py::buffer_protocol())
      .def_buffer([](BatchBuffer& b) {
        return py::buffer_info(b.data, b.itemsize, b.format, 1, {b.count}, {b.itemsize});
      })
      .def("__len__", [](const BatchBuffer& b) { return b.count; });

  py::class_<DatasetLoader>(m, "Loader")
      .def(py::init(&make_loader))
      .def(
          "prepare",
          [](DatasetLoader& l, std::vector<std::int64_t> order, bool floats,
             std::array<float, 3> mean, std::array<float, 3> std, bool channels_last) {
            py::gil_scoped_release nogil;
            l.prepare(std::move(order), FloatOutput{floats, mean, std, channels_last});
          },
          py::arg("order"), py::arg("floats"), py::arg("mean"), py::arg("std"),
          py::arg("channels_last"))
      .def(
          "start_epoch",
          [](DatasetLoader& l, int epoch, std::vector<std::int64_t> order) {
            py::gil_scoped_release nogil;  // waits for the workers' abandoned batches
            l.start_epoch(epoch, std::move(order));
          },
          py::arg("epoch"), py::arg("order"))
      .def("next", &next_batch)
      .def_property_readonly("size", &DatasetLoader::size)
      .def_property_readonly("batches_per_epoch", &DatasetLoader::batches_per_epoch)
      .def_property_readonly("samples_per_epoch", &DatasetLoader::samples_per_epoch)
      .def_property_readonly("shape",
                             [](const DatasetLoader& l) {
                               const auto& s = l.transform().out;
                               return py::make_tuple(s.channels, s.height, s.width);
                             })
      .def_property_readonly("augments", [](const DatasetLoader& l) { return l.transform().train; })
      .def("stats",
           [](const DatasetLoader& l) {
             dl::data::ChannelStats s;
             {
               py::gil_scoped_release nogil;
               s = l.stats();
             }
             return py::make_tuple(s.mean, s.std);
           })
      .def_property_readonly("classes", &DatasetLoader::class_names)
      .def("label", &DatasetLoader::label)
      .def_property_readonly("kind", &DatasetLoader::kind)
      .def("describe", &DatasetLoader::describe)
      .def_property_readonly("shard_counts", &DatasetLoader::shard_counts)
      .def_property_readonly("remote_summary", &DatasetLoader::remote_summary)
      .def("failures", &failures)
      .def("describe_skips", &describe, py::arg("counts"), py::arg("name_files"))
      .def_property_readonly("decode_scales",
                             [](const DatasetLoader& l) {
                               // {M: JPEGs decoded at M/8} for the scales used so far
                               py::dict out;
                               const dl::data::DecodeScales s = l.decode_scales();
                               for (std::size_t k = 0; k < s.size(); ++k) {
                                 if (s[k] > 0) out[py::int_(k + 1)] = s[k];
                               }
                               return out;
                             })
      .def_property_readonly("jpeg_index_bytes", &DatasetLoader::entropy_index_bytes)
      .def_property_readonly("pool_buffers", &DatasetLoader::pool_buffers)
      .def_property_readonly("float_buffers", &DatasetLoader::float_buffers)
      .def_property_readonly("float_buffer_bytes", &DatasetLoader::float_buffer_bytes);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  using namespace dl::loader_module;
  m.doc() = "dl::data's loader (use the dl_loader package, not this module)";
  bind_exceptions(m);
  bind_loader(m);

  m.def("plan_train_crops", &plan_train_crops);
  m.def(
      "shard_epoch_indices",
      [](const std::vector<std::int64_t>& counts, int epoch, int world, int rank, bool shuffle,
         std::uint64_t seed, std::int64_t buffer, bool equal_shares) {
        dl::data::ShardOrderSpec spec{world, rank, shuffle, seed, buffer, equal_shares};
        return dl::data::shard_epoch_indices(counts, spec, epoch);
      },
      py::arg("counts"), py::arg("epoch"), py::arg("world_size"), py::arg("rank"),
      py::arg("shuffle"), py::arg("seed"), py::arg("buffer"), py::arg("equal_shares"));
  m.def("resized_crop", &resized_crop);
  m.def("channels_last_into", &channels_last_into);
}
