# MPI for data-parallel training across processes (nascent/dist/mpi.cpp):
# Open MPI from Debian (libopenmpi-dev), found through CMake's FindMPI.
#
#   -DNASCENT_MPI=AUTO (default)  build the MPI communicator if MPI is found
#   -DNASCENT_MPI=ON              fail the configure without MPI
#   -DNASCENT_MPI=OFF             never (dist::make_mpi_communicator says so)
set(NASCENT_MPI "AUTO" CACHE STRING
    "The MPI communicator: AUTO (when MPI is found), ON or OFF")
set_property(CACHE NASCENT_MPI PROPERTY STRINGS AUTO ON OFF)
set(NASCENT_HAVE_MPI OFF)
if(NOT NASCENT_WASM AND NOT NASCENT_MPI STREQUAL "OFF")
  # The C API through the C++ compiler (the project enables no C); the
  # deprecated MPI C++ bindings are left out.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(NASCENT_HAVE_MPI ON)
    message(STATUS "nascent: the MPI communicator (MPI ${MPI_CXX_VERSION}, "
                   "${MPI_CXX_LIBRARIES})")
  elseif(NASCENT_MPI STREQUAL "ON")
    message(FATAL_ERROR "NASCENT_MPI=ON but no MPI was found: apt-get install "
                        "libopenmpi-dev openmpi-bin")
  else()
    message(STATUS "nascent: no MPI found; `--distributed mpi` is not built")
  endif()
endif()
