// Backends by name, for programs that let their user pick where to run:
// "cpu", "cuda" (device 0), "cuda:N" or "webgpu" (the first adapter);
// "cpu:composed" is the CPU with its fused transformer kernels hidden (rope,
// attention, glu, qembedding and grouped qmatmul run core's composed defaults),
// to test and measure what a backend without them computes and pays. Lives
// outside core, which never names a backend; the CUDA backend is offered only
// in builds that have it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nascent/core/backend.h"
#include "nascent/dist/communicator.h"

namespace nascent {

// A new backend for `device`. ValueError naming the device and the choices
// when the name is unknown or this build has no CUDA backend; BackendError
// when the build has one but the device is missing.
std::unique_ptr<Backend> make_backend(const std::string& device);

// Where `backend` runs, for a program's log line: "2 CPU threads" for the
// CPU backend, the backend's name ("cuda:0") otherwise.
std::string describe_backend(const Backend& backend);

// The device names this build understands ("cpu", and "cuda" or "webgpu"
// when that backend is compiled in, whether or not a GPU is present).
std::vector<std::string> device_names();

// The communicator of a multi-process run (dist/communicator.h): "mpi"
// (any backend), "nccl" (`backend` must be a CUDA backend, the rank's
// GPU) or "local" (one process). Rank and world size come from the
// launcher's variables (dist/environment.h). NCCL's clique id comes from
// NASCENT_NCCL_ID (set by `nascent train --nproc`), or, under mpirun, from
// rank 0 by MPI. ValueError for an unknown kind; BackendError when this
// build lacks it.
std::unique_ptr<dist::Communicator> make_communicator(const std::string& kind,
                                                      Backend& backend);

// A new NCCL clique id for a launcher to hand to its ranks (as
// NASCENT_NCCL_ID); needs no GPU. BackendError without the CUDA backend.
std::string make_nccl_clique_id();

}  // namespace nascent
