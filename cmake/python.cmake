# The Python module (python/, `import nascent`), through pybind11.
#
#   -DNASCENT_PYTHON=OFF (default)   never build it
#   -DNASCENT_PYTHON=AUTO            build it when pybind11 and Python's
#                                    headers are found
#   -DNASCENT_PYTHON=ON              fail the configure without them
#
# The release preset sets ON (scripts/setup.sh installs pybind11-dev and
# python3-dev), so CI and the README's test command build the module and
# ctest runs its pytest suite (python_tests) with the C++ suite; the other
# presets and a plain configure leave it off. Compiling the libraries
# position-independent for it was measured not to slow the kernels
# (bench/NOTES.md, "Python bindings": the hot kernels' code is the same).
#
# The interpreter is Debian's /usr/bin/python3 unless Python_EXECUTABLE says
# otherwise (pip's build through scikit-build-core sets it to pip's own), so
# the module, NumPy and PyTorch are of one Python. The module links the
# static libraries, so when it is built they are compiled position-
# independent (cmake/install.cmake).

set(NASCENT_PYTHON "OFF" CACHE STRING
    "Build the Python module: AUTO (when pybind11 is found), ON or OFF")
set_property(CACHE NASCENT_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(NASCENT_HAVE_PYTHON OFF)

if(NOT NASCENT_WASM AND NOT NASCENT_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  if(Python_FOUND)
    find_package(pybind11 2.10 CONFIG)
  endif()
  if(Python_FOUND AND pybind11_FOUND)
    set(NASCENT_HAVE_PYTHON ON)
    message(STATUS "nascent: building the Python module for "
                   "${Python_EXECUTABLE} (pybind11 ${pybind11_VERSION})")
  elseif(NASCENT_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "NASCENT_PYTHON=ON but Python's headers or pybind11 "
                        "were not found (apt-get install pybind11-dev "
                        "python3-dev)")
  else()
    message(STATUS "nascent: no pybind11 found; the Python module is not built")
  endif()
endif()
