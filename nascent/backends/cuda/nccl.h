// Collectives between GPUs over NCCL (`nascent train --device cuda
// --distributed nccl`), on the CUDA backend's stream: a collective is
// enqueued like any op and returns at once, so gradient buckets overlap
// with the rest of backward by construction. libnccl (in the CUDA toolkit
// here, 200+ MB) is opened with dlopen on first use, as cuBLASLt is.
//
// Every rank joins with the same id: rank 0's (or a launcher's)
// nccl_unique_id(), handed to the others out of band (an environment
// variable from `--nproc`, or an MPI broadcast under mpirun). A rank that
// dies leaves NCCL's peers waiting on the GPU: the launcher (nascent's
// `--nproc`, or mpirun) ends the run when a process exits.
//
// This header holds no CUDA or NCCL types.
#pragma once

#include <memory>
#include <string>

#include "nascent/backends/cuda/backend.h"
#include "nascent/dist/communicator.h"

namespace nascent::cuda {

// Whether this build has NCCL's header (the communicator can be made).
bool has_nccl();

// A new clique's id as 256 hex digits (ncclGetUniqueId; needs no GPU).
std::string nccl_unique_id();

// Joins clique `id` as `rank` of `world_size`, on `gpu`'s device and
// stream (ncclCommInitRank). Tensors of its collectives must live on
// `gpu` (or a backend wrapping it, such as autodiff's).
std::unique_ptr<dist::Communicator> make_nccl_communicator(
    Backend& gpu, int rank, int world_size, const std::string& id);

// libnccl as loaded with every entry point the communicator calls
// (tests, diagnostics); BackendError naming what is missing.
struct NcclLibrary {
  std::string path;  // where libnccl.so.2 was opened from
  int version = 0;   // ncclGetVersion: major * 10000 + minor * 100 + patch
  int header_version = 0;  // NCCL_VERSION_CODE of the header built against
  int entry_points = 0;
};
NcclLibrary load_nccl_library();

}  // namespace nascent::cuda
