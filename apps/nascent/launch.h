// `nascent train --nproc N`: starts N copies of this program as the ranks
// of one NCCL run on this host (one per GPU, as torchrun does for
// PyTorch), each with NASCENT_RANK, NASCENT_WORLD_SIZE, NASCENT_LOCAL_RANK,
// NASCENT_LOCAL_WORLD_SIZE and the clique id NASCENT_NCCL_ID, and waits for
// them. When one fails, the others are stopped (SIGTERM, then SIGKILL
// after 10 s), so that no rank is left waiting on a dead peer.
#pragma once

#include <string>
#include <vector>

namespace nascent::cli {

// The command line as main() received it, without the program's name.
std::vector<std::string>& program_arguments();

// Runs the program again `nproc` times with `args` (what follows the
// program's name); returns 0 when every rank exited with 0, else the
// first failure's status (a signal's number + 128).
int launch_ranks(int nproc, const std::vector<std::string>& args,
                 const std::string& nccl_id);

// `args` without the option `name` and its value ("--nproc 2" or
// "--nproc=2").
std::vector<std::string> without_option(const std::vector<std::string>& args,
                                        const std::string& name);

}  // namespace nascent::cli
