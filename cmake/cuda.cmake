# The CUDA backend (nascent/backends/cuda/): built whenever the CUDA toolkit
# is found, so that a machine without a GPU (CI) still compiles and links it;
# its tests skip, saying so, when no device is present.
#
#   -DNASCENT_CUDA=AUTO (default)  build it if nvcc is found
#   -DNASCENT_CUDA=ON              fail the configure without nvcc
#   -DNASCENT_CUDA=OFF             never build it
#   -DNASCENT_CUDNN=AUTO|ON|OFF    conv2d through cuDNN (8 or later) when
#                                  found beside the toolkit, else im2col
#
# Device code is compiled for the H100/H200 (sm_90a, which has wgmma and
# setmaxnreg) with compute_90 PTX embedded, so any newer GPU runs it after
# the driver compiles the PTX at load.

set(NASCENT_CUDNN "AUTO" CACHE STRING
    "conv2d through cuDNN: AUTO (when the toolkit has it), ON or OFF")
set_property(CACHE NASCENT_CUDNN PROPERTY STRINGS AUTO ON OFF)
set(NASCENT_CUDA "AUTO" CACHE STRING
    "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE NASCENT_CUDA PROPERTY STRINGS AUTO ON OFF)
set(NASCENT_HAVE_CUDA OFF)

if(NOT NASCENT_WASM AND NOT NASCENT_CUDA STREQUAL "OFF")
  if(NOT DEFINED ENV{CUDACXX} AND NOT CMAKE_CUDA_COMPILER
     AND EXISTS "/usr/local/cuda/bin/nvcc")
    set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Architectures are given as -gencode flags below.
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    if(NASCENT_CCACHE)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${NASCENT_CCACHE})
    endif()
    enable_language(CUDA)
    # CMake 3.25 predates nvcc's C++20 support: name the flag for it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit REQUIRED)
    set(NASCENT_HAVE_CUDA ON)
    message(STATUS "nascent: building the CUDA backend "
                   "(CUDA ${CUDAToolkit_VERSION})")
  elseif(NASCENT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "NASCENT_CUDA=ON but no CUDA compiler was found: put "
                        "nvcc on PATH or set CUDACXX")
  else()
    message(STATUS "nascent: no CUDA toolkit found; the CUDA backend is not "
                   "built")
  endif()
endif()

if(NASCENT_HAVE_CUDA)
  file(GLOB NASCENT_CUDA_SOURCES CONFIGURE_DEPENDS
       nascent/backends/cuda/*.cpp nascent/backends/cuda/*.cu)
  # NCCL's communicator implements dist::Communicator, a layer above the
  # backends: it is compiled into the `nascent` library (CMakeLists.txt).
  list(FILTER NASCENT_CUDA_SOURCES EXCLUDE REGEX "nascent/backends/cuda/nccl\\.cpp$")
  find_path(NASCENT_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  add_library(nascent_cuda ${NASCENT_CUDA_SOURCES})
  # cuBLASLt (and cuDNN below) are not linked but opened with dlopen when a
  # CUDA backend is first made (libraries.h): linked, libcublasLt costs
  # every process ~140 MiB at startup, GPU or not. Only their headers are
  # used here; the folders they were found in are where the loader looks
  # after the system's search.
  target_link_libraries(nascent_cuda PUBLIC nascent_core nascent_quant CUDA::cudart_static
                                            ${CMAKE_DL_LIBS})
  set(NASCENT_CUDA_LIBRARY_DIRS ${CUDAToolkit_LIBRARY_DIR})
  if(TARGET CUDA::cublasLt)
    get_target_property(_lt CUDA::cublasLt IMPORTED_LOCATION)
    if(_lt)
      get_filename_component(_lt_dir "${_lt}" DIRECTORY)
      list(APPEND NASCENT_CUDA_LIBRARY_DIRS ${_lt_dir})
    endif()
  endif()
  set(NASCENT_CUDA_FLAGS
      -gencode=arch=compute_90a,code=sm_90a
      -gencode=arch=compute_90,code=compute_90
      --expt-relaxed-constexpr
      # "Pointless comparison of unsigned integer with zero": templates over
      # every integer type compare with zero on purpose.
      --diag-suppress=186
      # Host code of .cu files gets the project's warnings (-Wpedantic
      # complains about nvcc's own line markers).
      -Xcompiler=-Wall,-Wextra,-Wshadow,-Wno-unused-parameter)
  if(NASCENT_WERROR)
    list(APPEND NASCENT_CUDA_FLAGS -Xcompiler=-Werror --Werror=all-warnings)
  endif()
  target_compile_options(nascent_cuda PRIVATE
                         "$<$<COMPILE_LANGUAGE:CUDA>:${NASCENT_CUDA_FLAGS}>")

  # cuDNN: in the toolkit's folders (as CUDA 13's installer puts it) or the
  # system's. Its engines are loaded at run time; a machine that lacks them
  # falls back to im2col (conv_dnn.cpp).
  if(NOT NASCENT_CUDNN STREQUAL "OFF")
    find_path(NASCENT_CUDNN_INCLUDE_DIR cudnn.h
              HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(NASCENT_CUDNN_LIBRARY cudnn
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib
                       ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    set(NASCENT_CUDNN_MAJOR 0)
    if(NASCENT_CUDNN_INCLUDE_DIR
       AND EXISTS "${NASCENT_CUDNN_INCLUDE_DIR}/cudnn_version.h")
      file(STRINGS "${NASCENT_CUDNN_INCLUDE_DIR}/cudnn_version.h" _major
           REGEX "^#define CUDNN_MAJOR [0-9]+")
      string(REGEX REPLACE ".* ([0-9]+)$" "\\1" NASCENT_CUDNN_MAJOR "${_major}")
    endif()
    if(NASCENT_CUDNN_LIBRARY AND NASCENT_CUDNN_MAJOR GREATER_EQUAL 8)
      target_include_directories(nascent_cuda SYSTEM PRIVATE
                                 ${NASCENT_CUDNN_INCLUDE_DIR})
      target_compile_definitions(nascent_cuda PRIVATE NASCENT_HAVE_CUDNN=1)
      get_filename_component(_dnn_dir "${NASCENT_CUDNN_LIBRARY}" DIRECTORY)
      list(APPEND NASCENT_CUDA_LIBRARY_DIRS ${_dnn_dir})
      message(STATUS "nascent: conv2d through cuDNN ${NASCENT_CUDNN_MAJOR} "
                     "(${NASCENT_CUDNN_LIBRARY})")
    elseif(NASCENT_CUDNN STREQUAL "ON")
      message(FATAL_ERROR "NASCENT_CUDNN=ON but cuDNN 8 or later was not found")
    else()
      message(STATUS "nascent: no cuDNN found; conv2d uses im2col + cuBLASLt")
    endif()
  endif()
  # Only the loader's file gets the folders, so that changing them does not
  # rebuild the kernels.
  list(REMOVE_DUPLICATES NASCENT_CUDA_LIBRARY_DIRS)
  string(REPLACE ";" ":" _dirs "${NASCENT_CUDA_LIBRARY_DIRS}")
  set_property(SOURCE nascent/backends/cuda/libraries.cpp APPEND PROPERTY
               COMPILE_DEFINITIONS "NASCENT_CUDA_LIBRARY_DIRS=\"${_dirs}\"")
endif()
