# The fuzz build's instrumentation (DL_BUILD_FUZZ=ON, the "fuzz" preset): every library the
# harnesses reach is compiled with libFuzzer's coverage hooks and with AddressSanitizer and UBSan,
# so a crash, an out-of-bounds access or undefined behaviour inside a reader stops the run. Each
# harness then links libFuzzer's main (tests/fuzz/CMakeLists.txt). clang only: GCC has no libFuzzer.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DL_BUILD_FUZZ needs clang with libFuzzer (this is ${CMAKE_CXX_COMPILER_ID}): "
                      "configure with the fuzz preset, or -DCMAKE_CXX_COMPILER=clang++")
endif()

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] DL_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT DL_HAVE_LIBFUZZER)
  message(FATAL_ERROR "DL_BUILD_FUZZ: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer "
                      "(Debian: apt-get install libclang-rt-dev; env/install-native.sh installs it)")
endif()

# UBSan findings abort instead of printing and going on, so libFuzzer sees them as crashes.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
