#include "apps/nascent/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::cli {

std::vector<std::string>& program_arguments() {
  static std::vector<std::string> args;
  return args;
}

std::vector<std::string> without_option(const std::vector<std::string>& args,
                                        const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;  // And its value.
    } else if (args[i].rfind(name + "=", 0) != 0) {
      out.push_back(args[i]);
    }
  }
  return out;
}

namespace {

// Exit status of a wait() result, as a shell reports it.
int status_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

std::string describe(int st) {
  if (WIFSIGNALED(st)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(st),
                       strsignal(WTERMSIG(st)));
  }
  return fmt::format("exited with status {}", status_of(st));
}

}  // namespace

int launch_ranks(int nproc, const std::vector<std::string>& args,
                 const std::string& nccl_id) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      for (pid_t p : pids) kill(p, SIGKILL);
      throw Error(fmt::format("train --nproc: fork failed for rank {}", rank));
    }
    if (pid == 0) {
      const std::string r = std::to_string(rank), n = std::to_string(nproc);
      setenv("NASCENT_RANK", r.c_str(), 1);
      setenv("NASCENT_LOCAL_RANK", r.c_str(), 1);
      setenv("NASCENT_WORLD_SIZE", n.c_str(), 1);
      setenv("NASCENT_LOCAL_WORLD_SIZE", n.c_str(), 1);
      setenv("NASCENT_NCCL_ID", nccl_id.c_str(), 1);
      std::vector<char*> argv;
      std::string self = "nascent";
      argv.push_back(self.data());
      std::vector<std::string> copy = args;
      for (std::string& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "nascent: rank %d: exec of /proc/self/exe failed\n",
                   rank);
      _exit(127);
    }
    pids.push_back(pid);
  }
  using Clock = std::chrono::steady_clock;
  int first = 0, alive = nproc;
  Clock::time_point stopping;
  bool killed = false;
  while (alive > 0) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      --alive;
      int rank = 0;
      while (rank < nproc && pids[size_t(rank)] != pid) ++rank;
      if (rank < nproc) pids[size_t(rank)] = -1;
      if (status_of(st) != 0 && first == 0) {
        first = status_of(st);
        fmt::print(stderr, "nascent: rank {} of {} {}; stopping the others\n",
                   rank, nproc, describe(st));
        for (pid_t p : pids) {
          if (p > 0) kill(p, SIGTERM);
        }
        stopping = Clock::now();
      }
      continue;
    }
    if (pid < 0) break;  // No children left (ECHILD).
    if (first != 0 && !killed &&
        Clock::now() - stopping > std::chrono::seconds(10)) {
      for (pid_t p : pids) {
        if (p > 0) kill(p, SIGKILL);
      }
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return first;
}

}  // namespace nascent::cli
