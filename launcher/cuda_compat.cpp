// The driver-versus-CUDA check: version parsing, the table of minimum drivers, the verdict.
#include "launcher/cuda_compat.h"

#include <cstdlib>
#include <vector>

#include "core/text.h"

namespace dl {
namespace {

struct MinDriver {
  int major;
  int minor;
  const char* driver;
};

// Minimum Linux driver per CUDA toolkit release (CUDA release notes, table 3).
constexpr MinDriver kMinDrivers[] = {
    {10, 0, "410.48"},    {10, 1, "418.39"},    {10, 2, "440.33"},    {11, 0, "450.36.06"},
    {11, 1, "455.23"},    {11, 2, "460.27.03"}, {11, 3, "465.19.01"}, {11, 4, "470.42.01"},
    {11, 5, "495.29.05"}, {11, 6, "510.39.01"}, {11, 7, "515.43.04"}, {11, 8, "520.61.05"},
    {12, 0, "525.60.13"}, {12, 1, "530.30.02"}, {12, 2, "535.54.03"}, {12, 3, "545.23.06"},
    {12, 4, "550.54.14"}, {12, 5, "555.42.02"}, {12, 6, "560.28.03"},
};

// The driver every minor release of a major needs for minor-version compatibility.
const char* compat_floor(int major) {
  if (major == 11) return "450.80.02";
  if (major == 12) return "525.60.13";
  return nullptr;
}

std::vector<long> version_parts(const std::string& v) {
  std::vector<long> parts;
  for (const auto& p : split(v, '.')) parts.push_back(std::strtol(p.c_str(), nullptr, 10));
  return parts;
}

bool older(const CudaVersion& a, const CudaVersion& b) {
  return a.major != b.major ? a.major < b.major : a.minor < b.minor;
}

}  // namespace

std::optional<CudaVersion> parse_cuda_version(const std::string& text) {
  const auto parts = split(trim(text), '.');
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  for (const auto& p : parts) {
    if (!parse_u64(p) || p.size() > 4) return std::nullopt;
  }
  CudaVersion v;
  v.major = static_cast<int>(*parse_u64(parts[0]));
  v.minor = parts.size() > 1 ? static_cast<int>(*parse_u64(parts[1])) : 0;
  if (v.major == 0) return std::nullopt;
  return v;
}

CudaVersion cuda_from_nvml(int version) {
  return {version / 1000, (version % 1000) / 10};
}

std::string to_string(const CudaVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor);
}

std::string min_driver_for(const CudaVersion& v) {
  for (const auto& m : kMinDrivers) {
    if (m.major == v.major && m.minor == v.minor) return m.driver;
  }
  return {};
}

int compare_driver_versions(const std::string& a, const std::string& b) {
  const auto pa = version_parts(a);
  const auto pb = version_parts(b);
  for (size_t i = 0; i < pa.size() || i < pb.size(); ++i) {
    const long x = i < pa.size() ? pa[i] : 0;
    const long y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

DriverVerdict check_cuda_driver(const GpuReport& gpu, const std::string& required,
                                const std::string& source) {
  const auto need = parse_cuda_version(required);
  if (!need || gpu.cuda_driver_version <= 0) return {};
  const CudaVersion have = cuda_from_nvml(gpu.cuda_driver_version);
  if (!older(have, *need)) return {};

  const std::string driver =
      "NVIDIA driver " +
      (gpu.driver_version.empty() ? std::string("(version unknown)") : gpu.driver_version) +
      " supports CUDA up to " + to_string(have);
  const std::string wanted = "CUDA " + required + " (" + source + ")";
  const std::string full = min_driver_for(*need);
  const std::string fix =
      full.empty()
          ? "update the NVIDIA driver to one that supports CUDA " + to_string(*need)
          : "update the NVIDIA driver to >= " + full + " (CUDA " + to_string(*need) + " on Linux)";
  const char* floor = compat_floor(need->major);
  if (have.major == need->major && floor != nullptr && !gpu.driver_version.empty() &&
      compare_driver_versions(gpu.driver_version, floor) >= 0) {
    return {true, driver + ", older than " + wanted +
                      ": it runs through CUDA minor-version compatibility, but kernels that need "
                      "PTX JIT or newer driver APIs fail; " +
                      fix};
  }
  std::string why;
  if (have.major == need->major && floor != nullptr) {
    why = ", and CUDA " + std::to_string(need->major) + ".x on an older driver needs at least " +
          floor;
  }
  return {false, driver + ", but this image needs " + wanted + why + ": " + fix +
                     ", or train on the CPU with --device cpu"};
}

}  // namespace dl
