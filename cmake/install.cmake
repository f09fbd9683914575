# `cmake --install BUILD --prefix P`: the public headers, the libraries
# (static, or shared with -DBUILD_SHARED_LIBS=ON), the `nascent` program, a
# CMake package and a pkg-config file, all relocatable (paths relative to the
# prefix, so P can be moved or packed). A project then says
#
#   find_package(nascent 0.1 REQUIRED)          # or COMPONENTS cuda
#   target_link_libraries(app PRIVATE nascent::nascent)
#
# nascent::nascent is every layer (core, CPU, autodiff, nn, optim, data, io,
# tokenizer, train, models, generate, onnx); nascent::core, ::quant, ::cpu
# and, when it was built, ::cuda are its parts. examples/ builds against
# an install of this in CI (scripts/examples_test.sh).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NASCENT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/nascent")
set(nascent_install_targets nascent_core nascent_quant nascent_cpu nascent)
if(NASCENT_HAVE_CUDA)
  list(APPEND nascent_install_targets nascent_cuda)
endif()
if(NASCENT_HAVE_WEBGPU)
  list(APPEND nascent_install_targets nascent_webgpu)
endif()

# The Python module links the static libraries into a shared object, so
# they are then compiled position-independent, as shared libraries are;
# -fno-semantic-interposition keeps the calls inside a library as direct
# (and inlinable) as in a position-dependent build. Only the libraries: the
# tests and programs keep their flags (and their cached objects). The
# export macro CMake defines for shared libraries is not used here, and
# leaving it out lets a shared and a PIC static build share ccache's objects.
if(NASCENT_HAVE_PYTHON OR BUILD_SHARED_LIBS)
  set_target_properties(${nascent_install_targets} PROPERTIES
                        POSITION_INDEPENDENT_CODE ON DEFINE_SYMBOL "")
  foreach(t IN LISTS nascent_install_targets)
    target_compile_options(${t} PRIVATE
                           "$<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>")
  endforeach()
endif()

foreach(t IN LISTS nascent_install_targets)
  string(REGEX REPLACE "^nascent_" "" export_name "${t}")
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name}
                                        VERSION ${PROJECT_VERSION}
                                        SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
endforeach()
target_include_directories(nascent_core PUBLIC
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The installed program finds the shared libraries beside it, wherever the
# prefix is moved.
file(RELATIVE_PATH nascent_bin_to_lib "/p/${CMAKE_INSTALL_BINDIR}"
     "/p/${CMAKE_INSTALL_LIBDIR}")
set_target_properties(nascent_cli PROPERTIES
                      INSTALL_RPATH "$ORIGIN/${nascent_bin_to_lib}")

install(TARGETS ${nascent_install_targets} EXPORT nascentTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS nascent_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The public headers: every header of the layers, and of the backends only
# the ones users name (the CPU and CUDA Backend classes, the thread pool);
# the kernels' headers stay inside. The same set as the AllHeaders test.
file(GLOB_RECURSE nascent_public_headers RELATIVE ${PROJECT_SOURCE_DIR}
     ${PROJECT_SOURCE_DIR}/nascent/*.h)
list(FILTER nascent_public_headers EXCLUDE REGEX "^nascent/backends/(cpu|cuda|webgpu)/")
list(APPEND nascent_public_headers nascent/backends/cpu/backend.h
     nascent/backends/cpu/thread_pool.h)
if(NASCENT_HAVE_CUDA)
  list(APPEND nascent_public_headers nascent/backends/cuda/backend.h)
endif()
if(NASCENT_HAVE_WEBGPU)
  list(APPEND nascent_public_headers nascent/backends/webgpu/backend.h)
  # wgpu-native goes beside nascent's libraries; nascentConfig.cmake names
  # it as the same imported target (it has no SONAME).
  install(FILES ${NASCENT_WGPU_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
foreach(h IN LISTS nascent_public_headers)
  get_filename_component(dir "${h}" DIRECTORY)
  install(FILES ${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

install(EXPORT nascentTargets NAMESPACE nascent::
        DESTINATION ${NASCENT_CMAKE_DIR})
configure_package_config_file(cmake/nascentConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/nascentConfig.cmake
                              INSTALL_DESTINATION ${NASCENT_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same 0.N matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nascentConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nascentConfig.cmake
              ${PROJECT_BINARY_DIR}/nascentConfigVersion.cmake
        DESTINATION ${NASCENT_CMAKE_DIR})

# pkg-config: the libraries in link order. A static build's users link its
# dependencies too (Requires); a shared build's need only those its headers
# use (fmt, nlohmann_json).
set(nascent_pc_libs "-lnascent")
if(NASCENT_HAVE_CUDA)
  # The CUDA runtime is linked statically, its libraries opened at run time.
  string(APPEND nascent_pc_libs " -lnascent_cuda")
  set(nascent_pc_cuda_libs "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt -l${CMAKE_DL_LIBS}")
endif()
if(NASCENT_HAVE_WEBGPU)
  string(APPEND nascent_pc_libs " -lnascent_webgpu")
  set(nascent_pc_webgpu_libs "-lwgpu_native -Wl,-rpath,\${libdir}")
endif()
string(APPEND nascent_pc_libs " -lnascent_cpu -lnascent_quant -lnascent_core")
set(nascent_pc_mpi "")
if(NASCENT_HAVE_MPI)
  set(nascent_pc_mpi " ompi-c")  # Open MPI's pkg-config name.
endif()
if(BUILD_SHARED_LIBS)
  set(nascent_pc_requires "fmt nlohmann_json")
  set(nascent_pc_requires_private "libhwy libhwy-contrib zlib${nascent_pc_mpi}")
  set(nascent_pc_libs_private "-pthread ${nascent_pc_cuda_libs} ${nascent_pc_webgpu_libs}")
else()
  set(nascent_pc_requires "fmt nlohmann_json libhwy libhwy-contrib zlib${nascent_pc_mpi}")
  set(nascent_pc_requires_private "")
  string(APPEND nascent_pc_libs " ${nascent_pc_cuda_libs} ${nascent_pc_webgpu_libs} -pthread")
  set(nascent_pc_libs_private "")
endif()
file(RELATIVE_PATH nascent_pc_to_prefix "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(cmake/nascent.pc.in ${PROJECT_BINARY_DIR}/nascent.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nascent.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
