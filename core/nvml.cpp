// NVML through dlopen. The few declarations needed are written out here (they are part of NVML's
// stable C ABI), so no CUDA header is needed to build.
#include "core/nvml.h"

#include <dlfcn.h>

#include <utility>

namespace dl {
namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlTemperatureGpu = 0;
constexpr unsigned kNvmlClockSm = 1;  // nvmlClockType_t
constexpr unsigned kNvmlClockMem = 2;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

template <typename Fn>
bool resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

struct Nvml::Api {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*capability)(nvmlDevice_t, int*, int*) = nullptr;
  // Optional: only the monitor uses them, and old drivers may lack them.
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  // Optional: the _v2 form came with driver 450; a driver too old for either is told apart by
  // its version string alone.
  nvmlReturn_t (*cuda_version)(int*) = nullptr;
  // Optional: dl-launch doctor's clocks and PCIe link.
  nvmlReturn_t (*clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
};

std::unique_ptr<Nvml> Nvml::open(const std::string& library, std::string* why) {
  const std::string name = library.empty() ? "libnvidia-ml.so.1" : library;
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *why = "NVML not found (" + name + "): no NVIDIA driver";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->handle = handle;
  const bool ok = resolve(handle, "nvmlInit_v2", &api->init) &&
                  resolve(handle, "nvmlShutdown", &api->shutdown) &&
                  resolve(handle, "nvmlErrorString", &api->error_string) &&
                  resolve(handle, "nvmlSystemGetDriverVersion", &api->driver_version) &&
                  resolve(handle, "nvmlDeviceGetCount_v2", &api->count) &&
                  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &api->handle_by_index) &&
                  resolve(handle, "nvmlDeviceGetName", &api->name) &&
                  resolve(handle, "nvmlDeviceGetMemoryInfo", &api->memory) &&
                  resolve(handle, "nvmlDeviceGetCudaComputeCapability", &api->capability);
  if (!ok) {
    const char* err = dlerror();
    *why = "NVML at " + name + " is incomplete: " + (err != nullptr ? err : "missing symbols");
    dlclose(handle);
    return nullptr;
  }
  resolve(handle, "nvmlDeviceGetUtilizationRates", &api->utilization);
  resolve(handle, "nvmlDeviceGetTemperature", &api->temperature);
  resolve(handle, "nvmlDeviceGetClockInfo", &api->clock);
  resolve(handle, "nvmlDeviceGetMaxClockInfo", &api->max_clock);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", &api->pcie_gen);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", &api->max_pcie_gen);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", &api->pcie_width);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", &api->max_pcie_width);
  if (!resolve(handle, "nvmlSystemGetCudaDriverVersion_v2", &api->cuda_version)) {
    resolve(handle, "nvmlSystemGetCudaDriverVersion", &api->cuda_version);
  }
  const nvmlReturn_t rc = api->init();
  if (rc != kNvmlSuccess) {
    *why = std::string("NVML did not initialise: ") + api->error_string(rc);
    dlclose(handle);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(api_->handle);
}

std::string Nvml::driver_version() const {
  char buffer[96] = {};
  if (api_->driver_version(buffer, sizeof buffer) != kNvmlSuccess) return {};
  return buffer;
}

int Nvml::cuda_driver_version() const {
  int version = 0;
  if (api_->cuda_version == nullptr || api_->cuda_version(&version) != kNvmlSuccess) return 0;
  return version;
}

int Nvml::device_count() const {
  unsigned count = 0;
  if (api_->count(&count) != kNvmlSuccess) return 0;
  return static_cast<int>(count);
}

std::optional<GpuInfo> Nvml::device(int index) const {
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(static_cast<unsigned>(index), &dev) != kNvmlSuccess)
    return std::nullopt;
  GpuInfo info;
  info.index = index;
  char name[96] = {};
  if (api_->name(dev, name, sizeof name) == kNvmlSuccess) info.name = name;
  nvmlMemory_t mem{};
  if (api_->memory(dev, &mem) == kNvmlSuccess) {
    info.total_bytes = mem.total;
    info.free_bytes = mem.free;
  }
  api_->capability(dev, &info.cc_major, &info.cc_minor);
  // Each figure where the driver has the call; a failed one leaves its 0 ("cannot say").
  const auto ask = [dev](nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*), unsigned* out) {
    if (fn != nullptr && fn(dev, out) != kNvmlSuccess) *out = 0;
  };
  const auto ask_clock = [dev](nvmlReturn_t (*fn)(nvmlDevice_t, unsigned, unsigned*), unsigned type,
                               unsigned* out) {
    if (fn != nullptr && fn(dev, type, out) != kNvmlSuccess) *out = 0;
  };
  ask_clock(api_->clock, kNvmlClockSm, &info.sm_clock_mhz);
  ask_clock(api_->max_clock, kNvmlClockSm, &info.max_sm_clock_mhz);
  ask_clock(api_->clock, kNvmlClockMem, &info.memory_clock_mhz);
  ask_clock(api_->max_clock, kNvmlClockMem, &info.max_memory_clock_mhz);
  ask(api_->pcie_gen, &info.pcie_gen);
  ask(api_->max_pcie_gen, &info.max_pcie_gen);
  ask(api_->pcie_width, &info.pcie_width);
  ask(api_->max_pcie_width, &info.max_pcie_width);
  return info;
}

std::optional<GpuUtilization> Nvml::utilization(int index) const {
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(static_cast<unsigned>(index), &dev) != kNvmlSuccess)
    return std::nullopt;
  GpuUtilization u;
  nvmlUtilization_t rates{};
  if (api_->utilization != nullptr && api_->utilization(dev, &rates) == kNvmlSuccess) {
    u.gpu_percent = rates.gpu;
    u.memory_percent = rates.memory;
  }
  if (api_->temperature != nullptr) api_->temperature(dev, kNvmlTemperatureGpu, &u.temperature_c);
  nvmlMemory_t mem{};
  if (api_->memory(dev, &mem) == kNvmlSuccess) {
    u.used_bytes = mem.used;
    u.total_bytes = mem.total;
  }
  return u;
}

GpuReport query_nvml(const std::string& library) {
  GpuReport report;
  std::string why;
  auto nvml = Nvml::open(library, &why);
  if (!nvml) {
    report.note = why;
    return report;
  }
  report.driver_version = nvml->driver_version();
  report.cuda_driver_version = nvml->cuda_driver_version();
  const int count = nvml->device_count();
  for (int i = 0; i < count; ++i) {
    if (auto gpu = nvml->device(i)) report.gpus.push_back(*gpu);
  }
  report.available = !report.gpus.empty();
  report.note = report.available ? "NVML " + report.driver_version : "NVML found no GPU";
  return report;
}

}  // namespace dl
