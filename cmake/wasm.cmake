# WebAssembly build (emcmake cmake ...): the core, the CPU backend and the
# test suite for wasm32 with SIMD128, run under node.
#
# Debian's compiled fmt and Highway libraries are for the host, so wasm uses
# them header-only, like nlohmann-json and CLI11. /usr/include as a whole must
# stay off the include path (its glibc headers would shadow emscripten's
# libc), so a build-tree folder holds links to just these header folders.

set(NASCENT_WASM_HEADERS "${CMAKE_BINARY_DIR}/wasm_include")
file(MAKE_DIRECTORY "${NASCENT_WASM_HEADERS}")
foreach(dir fmt hwy nlohmann CLI)
  if(IS_DIRECTORY "/usr/include/${dir}")
    file(CREATE_LINK "/usr/include/${dir}" "${NASCENT_WASM_HEADERS}/${dir}"
         SYMBOLIC)
  endif()
endforeach()
foreach(dir fmt hwy)
  if(NOT IS_DIRECTORY "${NASCENT_WASM_HEADERS}/${dir}")
    message(FATAL_ERROR "wasm: /usr/include/${dir} missing (run "
                        "scripts/setup.sh)")
  endif()
endforeach()

# The --pre-js, copied under a name that changes with its content: ninja
# relinks when a link command changes, not when a --pre-js file does.
file(SHA1 "${CMAKE_CURRENT_LIST_DIR}/wasm/node_env.js" node_env_hash)
string(SUBSTRING "${node_env_hash}" 0 12 node_env_hash)
set(node_env_js "${CMAKE_BINARY_DIR}/node_env_${node_env_hash}.js")
configure_file("${CMAKE_CURRENT_LIST_DIR}/wasm/node_env.js" "${node_env_js}"
               COPYONLY)

# Everything, googletest included, is built for SIMD128 with native wasm
# exceptions (the tests check exception types; node >= 17 runs them).
add_compile_options(-msimd128 -fwasm-exceptions)
add_link_options(
  -fwasm-exceptions
  # node 20 fails to instantiate the module asynchronously at start-up.
  -sWASM_ASYNC_COMPILATION=0
  -sENVIRONMENT=node
  # Tests read data files by their host paths.
  -sNODERAWFS=1
  -sALLOW_MEMORY_GROWTH=1
  -sINITIAL_MEMORY=64MB
  -sMAXIMUM_MEMORY=4GB
  -sTOTAL_STACK=16MB
  # Return main's exit code to node, so ctest sees failures.
  -sEXIT_RUNTIME=1
  "--pre-js=${node_env_js}")

# emcc's JS optimizer needs node's acorn, which Debian keeps in
# /usr/share/nodejs: give every link step that path, whatever the caller's
# environment.
set(node_path "/usr/share/nodejs")
if(DEFINED ENV{NODE_PATH})
  string(APPEND node_path ":$ENV{NODE_PATH}")
endif()
set(CMAKE_CXX_LINKER_LAUNCHER
    "${CMAKE_COMMAND}" -E env "NODE_PATH=${node_path}")

# fmt, header-only.
add_library(nascent_wasm_fmt INTERFACE)
target_include_directories(nascent_wasm_fmt SYSTEM INTERFACE
                           "${NASCENT_WASM_HEADERS}")
target_compile_definitions(nascent_wasm_fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(fmt::fmt ALIAS nascent_wasm_fmt)

# Highway, header-only. With -msimd128 HWY_TARGETS is HWY_WASM alone, and
# highway.h then turns HWY_EXPORT / HWY_DYNAMIC_DISPATCH into static dispatch:
# kernels written for dynamic dispatch build unchanged and never reach
# libhwy's target table. hwy_runtime.cpp supplies the few libhwy functions
# the headers can still call (hwy::Abort, from HWY_ASSERT in some ops).
add_library(nascent_wasm_hwy STATIC
            "${CMAKE_CURRENT_LIST_DIR}/wasm/hwy_runtime.cpp")
target_include_directories(nascent_wasm_hwy SYSTEM PUBLIC
                           "${NASCENT_WASM_HEADERS}")
add_library(hwy::hwy ALIAS nascent_wasm_hwy)
add_library(nascent_wasm_hwy_contrib INTERFACE)
target_link_libraries(nascent_wasm_hwy_contrib INTERFACE nascent_wasm_hwy)
add_library(hwy::hwy_contrib ALIAS nascent_wasm_hwy_contrib)

# Header-only libraries the apps and tests may use.
add_library(nascent_wasm_headers INTERFACE)
target_include_directories(nascent_wasm_headers SYSTEM INTERFACE
                           "${NASCENT_WASM_HEADERS}")
add_library(nlohmann_json::nlohmann_json ALIAS nascent_wasm_headers)
add_library(CLI11::CLI11 ALIAS nascent_wasm_headers)

# GoogleTest from Debian's sources (the packaged libgtest is x86-64); its
# CMake defines GTest::gtest and GTest::gtest_main.
if(NASCENT_BUILD_TESTS)
  set(NASCENT_GTEST_SOURCE "/usr/src/googletest" CACHE PATH
      "GoogleTest sources for the wasm build")
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(gtest_disable_pthreads ON CACHE BOOL "" FORCE)
  add_subdirectory("${NASCENT_GTEST_SOURCE}"
                   "${CMAKE_BINARY_DIR}/_deps/googletest" EXCLUDE_FROM_ALL)
  # Not our code: keep its warnings out of -Werror builds.
  target_compile_options(gtest PRIVATE -w)
  target_compile_options(gtest_main PRIVATE -w)
endif()
