# The WebGPU backend (nascent/backends/webgpu/), on wgpu-native through the
# standard webgpu.h. scripts/setup_webgpu.sh unpacks the library and headers
# from PyPI's pinned `wgpu` wheel into build/webgpu-sdk; a machine without a
# GPU runs the backend on Mesa's lavapipe (its tests skip, saying so, when
# no adapter is found).
#
#   -DNASCENT_WEBGPU=AUTO (default)  build it if wgpu-native is found
#   -DNASCENT_WEBGPU=ON              fail the configure without it
#   -DNASCENT_WEBGPU=OFF             never build it
#   -DNASCENT_WEBGPU_SDK=<dir>       where to look (include/, lib/)

set(NASCENT_WEBGPU "AUTO" CACHE STRING
    "Build the WebGPU backend: AUTO (when wgpu-native is found), ON or OFF")
set_property(CACHE NASCENT_WEBGPU PROPERTY STRINGS AUTO ON OFF)
set(NASCENT_WEBGPU_SDK "${CMAKE_SOURCE_DIR}/build/webgpu-sdk" CACHE PATH
    "wgpu-native's headers and library (scripts/setup_webgpu.sh)")
set(NASCENT_HAVE_WEBGPU OFF)

if(NOT NASCENT_WASM AND NOT NASCENT_WEBGPU STREQUAL "OFF")
  find_path(NASCENT_WGPU_INCLUDE_DIR wgpu.h
            HINTS ${NASCENT_WEBGPU_SDK}/include NO_DEFAULT_PATH)
  find_library(NASCENT_WGPU_LIBRARY wgpu_native
               HINTS ${NASCENT_WEBGPU_SDK}/lib NO_DEFAULT_PATH)
  if(NASCENT_WGPU_INCLUDE_DIR AND NASCENT_WGPU_LIBRARY)
    set(NASCENT_HAVE_WEBGPU ON)
    message(STATUS "nascent: building the WebGPU backend "
                   "(${NASCENT_WGPU_LIBRARY})")
  elseif(NASCENT_WEBGPU STREQUAL "ON")
    message(FATAL_ERROR "NASCENT_WEBGPU=ON but wgpu-native was not found in "
                        "${NASCENT_WEBGPU_SDK}: run scripts/setup_webgpu.sh")
  else()
    message(STATUS "nascent: no wgpu-native found (scripts/setup_webgpu.sh); "
                   "the WebGPU backend is not built")
  endif()
endif()

if(NASCENT_HAVE_WEBGPU)
  # The library in the wheel has no SONAME: link it by name and find it at
  # run time through the rpath.
  add_library(nascent_wgpu_native SHARED IMPORTED)
  get_filename_component(_wgpu_dir "${NASCENT_WGPU_LIBRARY}" DIRECTORY)
  set_target_properties(nascent_wgpu_native PROPERTIES
    IMPORTED_LOCATION "${NASCENT_WGPU_LIBRARY}"
    IMPORTED_NO_SONAME ON
    INTERFACE_INCLUDE_DIRECTORIES "${NASCENT_WGPU_INCLUDE_DIR}"
    INTERFACE_LINK_OPTIONS "-Wl,-rpath,${_wgpu_dir}")
  file(GLOB NASCENT_WEBGPU_SOURCES CONFIGURE_DEPENDS
       nascent/backends/webgpu/*.cpp)
  add_library(nascent_webgpu ${NASCENT_WEBGPU_SOURCES})
  target_link_libraries(nascent_webgpu PUBLIC nascent_core
                        PRIVATE nascent_wgpu_native)
  # The library's users (tests, programs) need its rpath too.
  target_link_options(nascent_webgpu INTERFACE
                      "$<BUILD_INTERFACE:-Wl,-rpath,${_wgpu_dir}>")
endif()
