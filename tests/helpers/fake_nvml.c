/* A stand-in for the NVIDIA driver's libnvidia-ml.so, loaded by dl-launch through
 * --nvml-library. It lets the tests show the launcher any GPUs they like, on machines with no
 * GPU at all, and a driver that fails to initialise.
 *
 *   FAKE_NVML_GPUS       "name,major,minor,total_MiB,free_MiB" entries separated by ';'
 *                        (unset or empty: no GPU)
 *   FAKE_NVML_INIT_FAIL  "1": nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_DRIVER     the driver version string (default "535.104.05")
 *   FAKE_NVML_CUDA       the newest CUDA the driver supports, NVML's integer form (default 12020
 *                        for 12.2, what driver 535 reports; "none": NVML_ERROR_NOT_SUPPORTED)
 *   FAKE_NVML_LINK       "gen,width,max_gen,max_width" of every GPU's PCIe link (default
 *                        "4,16,4,16")
 *   FAKE_NVML_CLOCKS     "sm,max_sm,memory,max_memory" MHz of every GPU (default
 *                        "1410,1410,1215,1215")
 *   FAKE_NVML_LOADED     a path: the library creates that file when it is loaded, so a test can
 *                        tell whether a process loaded it at all
 *
 * Only the functions dl-launch resolves are exported, with NVML's C ABI: int return codes,
 * opaque device handles, plain structs. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void fake_nvml_loaded(void) {
  const char* marker = getenv("FAKE_NVML_LOADED");
  if (marker == NULL || *marker == '\0') return;
  const int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
}

#define FAKE_SUCCESS 0
#define FAKE_ERROR_UNINITIALIZED 1
#define FAKE_ERROR_INVALID_ARGUMENT 2
#define FAKE_ERROR_NOT_SUPPORTED 3
#define FAKE_ERROR_INSUFFICIENT_SIZE 7
#define FAKE_ERROR_DRIVER_NOT_LOADED 9
#define FAKE_MAX_GPUS 16

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} fake_memory_t;

typedef struct {
  unsigned gpu;
  unsigned memory;
} fake_utilization_t;

typedef struct {
  char name[96];
  int major;
  int minor;
  unsigned long long total_bytes;
  unsigned long long free_bytes;
} fake_gpu_t;

static fake_gpu_t gpus[FAKE_MAX_GPUS];
static unsigned gpu_count;
static int initialised;

/* Copies `text` into `buffer` as NVML does: fails rather than truncating. */
static int copy_string(const char* text, char* buffer, unsigned length) {
  if (buffer == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  if (strlen(text) + 1 > length) return FAKE_ERROR_INSUFFICIENT_SIZE;
  memcpy(buffer, text, strlen(text) + 1);
  return FAKE_SUCCESS;
}

/* Parses one "name,major,minor,total_MiB,free_MiB" entry of `length` characters. */
static int parse_gpu(const char* entry, size_t length, fake_gpu_t* gpu) {
  char copy[256];
  char* fields[5];
  char* cursor = copy;
  size_t i;
  if (length == 0 || length >= sizeof copy) return 0;
  memcpy(copy, entry, length);
  copy[length] = '\0';
  for (i = 0; i < 5; ++i) {
    char* comma;
    if (cursor == NULL) return 0;
    fields[i] = cursor;
    comma = strchr(cursor, ',');
    if (comma != NULL) *comma = '\0';
    cursor = comma != NULL ? comma + 1 : NULL;
  }
  if (cursor != NULL || strlen(fields[0]) >= sizeof gpu->name) return 0;
  strcpy(gpu->name, fields[0]);
  gpu->major = atoi(fields[1]);
  gpu->minor = atoi(fields[2]);
  gpu->total_bytes = strtoull(fields[3], NULL, 10) << 20;
  gpu->free_bytes = strtoull(fields[4], NULL, 10) << 20;
  return 1;
}

static void load_gpus(void) {
  const char* spec = getenv("FAKE_NVML_GPUS");
  gpu_count = 0;
  while (spec != NULL && *spec != '\0' && gpu_count < FAKE_MAX_GPUS) {
    const char* end = strchr(spec, ';');
    const size_t length = end != NULL ? (size_t)(end - spec) : strlen(spec);
    if (parse_gpu(spec, length, &gpus[gpu_count])) ++gpu_count;
    spec = end != NULL ? end + 1 : NULL;
  }
}

/* Handles are index + 1, so that NULL is never a valid handle. */
static const fake_gpu_t* gpu_of(void* device) {
  const uintptr_t handle = (uintptr_t)device;
  if (!initialised || handle == 0 || handle > gpu_count) return NULL;
  return &gpus[handle - 1];
}

int nvmlInit_v2(void) {
  const char* fail = getenv("FAKE_NVML_INIT_FAIL");
  if (fail != NULL && strcmp(fail, "1") == 0) return FAKE_ERROR_DRIVER_NOT_LOADED;
  load_gpus();
  initialised = 1;
  return FAKE_SUCCESS;
}

int nvmlShutdown(void) {
  if (!initialised) return FAKE_ERROR_UNINITIALIZED;
  initialised = 0;
  return FAKE_SUCCESS;
}

const char* nvmlErrorString(int result) {
  switch (result) {
    case FAKE_SUCCESS:
      return "Success";
    case FAKE_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case FAKE_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case FAKE_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case FAKE_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case FAKE_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  const char* driver = getenv("FAKE_NVML_DRIVER");
  if (!initialised) return FAKE_ERROR_UNINITIALIZED;
  return copy_string(driver != NULL && *driver != '\0' ? driver : "535.104.05", version, length);
}

int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  const char* cuda = getenv("FAKE_NVML_CUDA");
  if (!initialised) return FAKE_ERROR_UNINITIALIZED;
  if (version == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  if (cuda != NULL && strcmp(cuda, "none") == 0) return FAKE_ERROR_NOT_SUPPORTED;
  *version = cuda != NULL && *cuda != '\0' ? atoi(cuda) : 12020;
  return FAKE_SUCCESS;
}

/* The older name; same answer. */
int nvmlSystemGetCudaDriverVersion(int* version) {
  return nvmlSystemGetCudaDriverVersion_v2(version);
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialised) return FAKE_ERROR_UNINITIALIZED;
  if (count == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  *count = gpu_count;
  return FAKE_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!initialised) return FAKE_ERROR_UNINITIALIZED;
  if (device == NULL || index >= gpu_count) return FAKE_ERROR_INVALID_ARGUMENT;
  *device = (void*)(uintptr_t)(index + 1);
  return FAKE_SUCCESS;
}

int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  const fake_gpu_t* gpu = gpu_of(device);
  if (gpu == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  return copy_string(gpu->name, name, length);
}

int nvmlDeviceGetMemoryInfo(void* device, fake_memory_t* memory) {
  const fake_gpu_t* gpu = gpu_of(device);
  if (gpu == NULL || memory == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  memory->total = gpu->total_bytes;
  memory->free = gpu->free_bytes;
  memory->used = gpu->total_bytes > gpu->free_bytes ? gpu->total_bytes - gpu->free_bytes : 0;
  return FAKE_SUCCESS;
}

int nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  const fake_gpu_t* gpu = gpu_of(device);
  if (gpu == NULL || major == NULL || minor == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  *major = gpu->major;
  *minor = gpu->minor;
  return FAKE_SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void* device, fake_utilization_t* utilization) {
  const fake_gpu_t* gpu = gpu_of(device);
  if (gpu == NULL || utilization == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  /* Fixed, recognisable figures: a monitor test can tell them from zero-initialised memory. */
  utilization->gpu = 42;
  utilization->memory = 17;
  return FAKE_SUCCESS;
}

int nvmlDeviceGetTemperature(void* device, unsigned sensor, unsigned* temperature) {
  const fake_gpu_t* gpu = gpu_of(device);
  if (gpu == NULL || temperature == NULL || sensor != 0) return FAKE_ERROR_INVALID_ARGUMENT;
  *temperature = 55;
  return FAKE_SUCCESS;
}

/* Field `index` (0-based) of the comma-separated list in variable `name`, else `fallback`. */
static unsigned list_field(const char* name, int index, unsigned fallback) {
  const char* spec = getenv(name);
  int i;
  if (spec == NULL || *spec == '\0') return fallback;
  for (i = 0; i < index; ++i) {
    spec = strchr(spec, ',');
    if (spec == NULL) return fallback;
    ++spec;
  }
  return (unsigned)strtoul(spec, NULL, 10);
}

static int link_field(void* device, unsigned* out, int index, unsigned fallback) {
  if (gpu_of(device) == NULL || out == NULL) return FAKE_ERROR_INVALID_ARGUMENT;
  *out = list_field("FAKE_NVML_LINK", index, fallback);
  return FAKE_SUCCESS;
}

int nvmlDeviceGetCurrPcieLinkGeneration(void* device, unsigned* gen) {
  return link_field(device, gen, 0, 4);
}
int nvmlDeviceGetCurrPcieLinkWidth(void* device, unsigned* width) {
  return link_field(device, width, 1, 16);
}
int nvmlDeviceGetMaxPcieLinkGeneration(void* device, unsigned* gen) {
  return link_field(device, gen, 2, 4);
}
int nvmlDeviceGetMaxPcieLinkWidth(void* device, unsigned* width) {
  return link_field(device, width, 3, 16);
}

/* Clock types as NVML numbers them: 1 SM, 2 memory. */
static int clock_field(void* device, unsigned type, unsigned* clock, int max) {
  if (gpu_of(device) == NULL || clock == NULL || (type != 1 && type != 2)) {
    return FAKE_ERROR_INVALID_ARGUMENT;
  }
  *clock = type == 1 ? list_field("FAKE_NVML_CLOCKS", max, 1410)
                     : list_field("FAKE_NVML_CLOCKS", 2 + max, 1215);
  return FAKE_SUCCESS;
}

int nvmlDeviceGetClockInfo(void* device, unsigned type, unsigned* clock) {
  return clock_field(device, type, clock, 0);
}
int nvmlDeviceGetMaxClockInfo(void* device, unsigned type, unsigned* clock) {
  return clock_field(device, type, clock, 1);
}
