# Every dependency is a Debian package (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(CapnProto REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)

pkg_check_modules(FABRIC REQUIRED IMPORTED_TARGET libfabric)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# cpp-httplib (Debian's libcpp-httplib-dev, a compiled library): the HTTP server of observe/.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)  # HMAC-SHA256 of the cluster secret (docs/design.md §13)

find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h REQUIRED)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
find_path(TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)

# Debian's CAF 0.17 ships no CMake package: wrap it in imported targets.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIB caf_core REQUIRED)
find_library(CAF_IO_LIB caf_io REQUIRED)
add_library(caf::core UNKNOWN IMPORTED)
set_target_properties(caf::core PROPERTIES IMPORTED_LOCATION ${CAF_CORE_LIB}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR} INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(caf::io UNKNOWN IMPORTED)
set_target_properties(caf::io PROPERTIES IMPORTED_LOCATION ${CAF_IO_LIB}
  INTERFACE_LINK_LIBRARIES caf::core)

# CUDA is optional. Look for nvcc on PATH and in the toolkit's standard location.
set(DUALPATH_HAVE_CUDA OFF)
if(NOT DUALPATH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(DUALPATH_NVCC nvcc PATHS /usr/local/cuda/bin NO_CACHE)
    if(DUALPATH_NVCC)
      set(CMAKE_CUDA_COMPILER ${DUALPATH_NVCC})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(DUALPATH_HAVE_CUDA ON)
    endif()
  endif()
  if(DUALPATH_CUDA STREQUAL "ON" AND NOT DUALPATH_HAVE_CUDA)
    message(FATAL_ERROR "DUALPATH_CUDA=ON but no usable nvcc / CUDA toolkit was found")
  endif()
endif()
message(STATUS "DualPath CUDA backend: ${DUALPATH_HAVE_CUDA}")
