# A LibTorch for compiling only (tests/oldest_build): the LibTorch 1.13 headers that
# env/oldest-chroot.sh unpacks into the bullseye chroot (Debian's libtorch-dev 1.13.1, with
# cmake_macros.h set as LibTorch 1.13.0's download has it: no glog, no gflags), and no library.
# It gives targets what the image's LibTorch gives them at compile time (include folders, the
# c10d definitions, the C++11 ABI), so that every translation unit that includes LibTorch is
# compiled there by the oldest compiler; nothing that links it can be built (tests/oldest_build
# builds object files only for those targets).
set(TORCH_INSTALL_PREFIX "$ENV{DL_TORCH_HEADERS}")
if(NOT TORCH_INSTALL_PREFIX)
  set(TORCH_INSTALL_PREFIX /opt/libtorch-1.13)
endif()
if(NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include/torch/torch.h")
  set(Torch_FOUND FALSE)
  set(Torch_NOT_FOUND_MESSAGE "no LibTorch headers in ${TORCH_INSTALL_PREFIX}/include")
  return()
endif()
set(TORCH_INCLUDE_DIRS ${TORCH_INSTALL_PREFIX}/include
                       ${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include)
if(NOT TARGET torch)
  add_library(torch INTERFACE IMPORTED)
  set_target_properties(torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
    INTERFACE_COMPILE_DEFINITIONS "USE_DISTRIBUTED;USE_C10D_GLOO;USE_RPC;USE_TENSORPIPE"
    INTERFACE_COMPILE_OPTIONS "-D_GLIBCXX_USE_CXX11_ABI=1")
endif()
set(TORCH_LIBRARIES torch)
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")
set(TORCH_VERSION 1.13.1)
set(Torch_FOUND TRUE)
