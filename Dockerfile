# syntax=docker/dockerfile:1
# The training image: CUDA 11.6 + cuDNN 8 on Ubuntu 20.04, the conda env `dl` (Python 3.10,
# PyTorch 1.13.0), dl-launch and dl-train built against LibTorch 1.13.0 (CUDA 11.6), the
# workspace template and Fashion-MNIST. `docker compose up train` runs it (docker-compose.yml).
#
#   docker build -t dl-tools .                   the image (target runtime)
#   docker build --target build -t dl-tools:build .   the build stage, with the test suite
#
# Every install step is a script in env/, shared with the native set-up and CI. The pinned
# versions below must equal env/versions.env (tests/image/versions_check.sh checks). The last
# group of arguments lets the same file build offline on Debian 12 (tests/image/smoke_build.sh):
# a local base image, Debian's LibTorch (CPU) and Fashion-MNIST package, no conda.

ARG BASE_IMAGE=nvidia/cuda:11.6.2-cudnn8-devel-ubuntu20.04
ARG RUNTIME_BASE_IMAGE=nvidia/cuda:11.6.2-cudnn8-runtime-ubuntu20.04
ARG CUDA_VERSION=11.6.2
ARG CUDNN_MAJOR=8
ARG PYTHON_VERSION=3.10.9
ARG PYTORCH_VERSION=1.13.0
ARG TORCHVISION_VERSION=0.14.0
ARG TORCHAUDIO_VERSION=0.13.0
ARG CUDATOOLKIT_VERSION=11.6
ARG LIBTORCH_VERSION=1.13.0
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu116/libtorch-cxx11-abi-shared-with-deps-1.13.0%2Bcu116.zip
ARG LIBTORCH_SHA256=
ARG MICROMAMBA_VERSION=1.5.8

# Where things come from: url|debian, micromamba|debian|none, download|debian.
ARG LIBTORCH_SOURCE=url
ARG CONDA=micromamba
ARG DATA_SOURCE=download

# ---------------------------------------------------------------------------------------------
# build: compilers, the libraries' headers, LibTorch; compiles both programs and runs the unit
# tests (`docker compose run test` runs the suite again from here).
FROM ${BASE_IMAGE} AS build
ARG LIBTORCH_SOURCE
ARG LIBTORCH_SHA256
ARG CONDA
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive

# The install scripts first, alone, so that a source change does not redo the downloads.
COPY env/ /src/env/
# curl, ca-certificates, unzip: the LibTorch and micromamba downloads. Ubuntu 20.04's CMake
# (3.16) is too old for CMakePresets.json (3.21) and the test suite (GTest::gtest_main needs 3.20):
# with CONDA=micromamba, CMake and Ninja come from conda-forge (env/build-tools.yml) while the
# compiler and every library stay Ubuntu's, so that the binaries link against what the runtime
# stage installs with apt. (Debian 12's own CMake, 3.25, does for the offline build.)
RUN apt-get update \
 && apt-get install -y -q --no-install-recommends curl ca-certificates unzip \
 && /src/env/install-native.sh --no-torch --no-test-data --no-image-tools --no-deploy-tools \
 && LIBTORCH_SHA256="${LIBTORCH_SHA256}" /src/env/install-libtorch.sh "${LIBTORCH_SOURCE}" /opt/libtorch \
 && /src/env/install-conda.sh "${CONDA}" tools \
 && rm -rf /var/lib/apt/lists/*

COPY . /src/
WORKDIR /src
# ccache's directory is a build cache (BuildKit and buildah keep it between builds), not a layer.
# tests/image/smoke_build.sh points CCACHE_DIR at the host's own cache instead (bound in with
# buildah's --volume): its base has the host's compiler and libraries, so the host build's objects
# serve the image's. CI=true makes warnings errors, as in the host's CI build (and so the flags,
# which ccache keys on, match it). ccache also keys on the locale's variables (the language of
# the compiler's messages): the smoke build passes those the host has set, and only those.
ARG CCACHE_DIR=/root/.cache/ccache
ARG CI=
ARG LANG
ARG LC_ALL
ARG LC_CTYPE
ARG LC_MESSAGES
# The `image` preset (CMakePresets.json): build/image, no benchmarks, LibTorch from /opt/libtorch.
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR="${CCACHE_DIR}" CI="${CI}" /src/env/install-dl.sh /opt/dl

# ---------------------------------------------------------------------------------------------
# runtime: the CUDA runtime libraries, the `dl` env, the data, the two programs.
FROM ${RUNTIME_BASE_IMAGE} AS runtime
ARG CUDA_VERSION
ARG CUDNN_MAJOR
ARG PYTHON_VERSION
ARG PYTORCH_VERSION
ARG TORCHVISION_VERSION
ARG TORCHAUDIO_VERSION
ARG CUDATOOLKIT_VERSION
ARG LIBTORCH_VERSION
ARG MICROMAMBA_VERSION
ARG LIBTORCH_SOURCE
ARG CONDA
ARG DATA_SOURCE
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive

LABEL org.opencontainers.image.title="dl-tools" \
      org.opencontainers.image.description="CUDA ${CUDA_VERSION} training image: conda env dl, dl-launch, dl-train" \
      dl.cuda="${CUDA_VERSION}" \
      dl.cudnn="${CUDNN_MAJOR}" \
      dl.python="${PYTHON_VERSION}" \
      dl.pytorch="${PYTORCH_VERSION}" \
      dl.torchvision="${TORCHVISION_VERSION}" \
      dl.torchaudio="${TORCHAUDIO_VERSION}" \
      dl.cudatoolkit="${CUDATOOLKIT_VERSION}" \
      dl.libtorch="${LIBTORCH_VERSION}" \
      dl.micromamba="${MICROMAMBA_VERSION}" \
      dl.sources="libtorch=${LIBTORCH_SOURCE} conda=${CONDA} data=${DATA_SOURCE}"

# The slow, rarely changing part first: the env `dl` (several GB) and the data set.
# tini: PID 1, so that `docker stop`'s SIGTERM reaches dl-launch (which forwards it to the
# trainer, which saves a checkpoint) and zombies are reaped. curl and ca-certificates: downloads.
COPY env/ /opt/dl/env/
RUN apt-get update \
 && apt-get install -y -q --no-install-recommends tini curl ca-certificates \
 && /opt/dl/env/install-conda.sh "${CONDA}" dl \
 && /opt/dl/env/install-data.sh "${DATA_SOURCE}" /opt/dl/data/fashion-mnist \
 && rm -rf /var/lib/apt/lists/*

# The programs, and the shared libraries they link (runtime-packages.txt: the packages that own
# them, found by env/runtime-packages.sh in the build stage; the LibTorch download is copied).
COPY --from=build /opt/dl/ /opt/dl/
COPY --from=build /opt/libtorch/lib/ /opt/libtorch/lib/
# /root is 0700 in the base images, but the workspace is /root/workspace and dl-launch runs the
# program as the workspace's owner (the host user): 0711 lets any user reach the mount point
# without listing /root.
# dl_plan, the companion module of a user's own script, goes into the env `dl`.
RUN apt-get update \
 && xargs -a /opt/dl/runtime-packages.txt apt-get install -y -q --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* \
 && /opt/dl/env/install-companion.sh /opt/dl \
 && chmod 0711 /root

# NVML (GPU probing in dl-launch) needs the driver's "utility" libraries, CUDA needs "compute".
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    MAMBA_ROOT_PREFIX=/opt/conda \
    PATH=/opt/dl/bin:/opt/conda/envs/dl/bin:${PATH}
WORKDIR /root/workspace
ENTRYPOINT ["tini", "--"]
CMD ["dl-launch"]
