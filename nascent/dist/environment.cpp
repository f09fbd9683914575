#include "nascent/dist/environment.h"

#include <charconv>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "nascent/core/error.h"

namespace nascent::dist {

namespace {

std::optional<long long> integer(const char* name, long long lo, long long hi) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  std::string s(v);
  long long out = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size() || out < lo || out > hi) {
    throw ValueError(
        fmt::format("environment: {}=\"{}\" is not a whole number in {}..{}",
                    name, s, lo, hi));
  }
  return out;
}

}  // namespace

Placement placement_from_environment() {
  struct Names {
    const char *rank, *size, *local_rank, *local_size;
  };
  const Names sets[] = {
      {"NASCENT_RANK", "NASCENT_WORLD_SIZE", "NASCENT_LOCAL_RANK",
       "NASCENT_LOCAL_WORLD_SIZE"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
  };
  constexpr long long kMaxRanks = 1 << 20;
  for (const Names& n : sets) {
    std::optional<long long> size = integer(n.size, 1, kMaxRanks);
    std::optional<long long> rank = integer(n.rank, 0, kMaxRanks);
    if (!size || !rank) continue;
    if (*rank >= *size) {
      throw ValueError(fmt::format("environment: {}={} is not below {}={}",
                                   n.rank, *rank, n.size, *size));
    }
    Placement p;
    p.rank = int(*rank);
    p.world_size = int(*size);
    p.local_size = int(integer(n.local_size, 1, *size).value_or(*size));
    p.local_rank =
        int(integer(n.local_rank, 0, p.local_size - 1).value_or(*rank));
    if (p.local_rank >= p.local_size) p.local_rank %= p.local_size;
    p.source = fmt::format("{}/{}", n.rank, n.size);
    return p;
  }
  return Placement{};
}

std::chrono::milliseconds timeout_from_environment() {
  const char* v = std::getenv("NASCENT_DIST_TIMEOUT");
  if (v == nullptr) return std::chrono::seconds(300);
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0.0) || s > 1e7) {
    throw ValueError(fmt::format(
        "environment: NASCENT_DIST_TIMEOUT=\"{}\" is not a positive number of "
        "seconds",
        v));
  }
  return std::chrono::milliseconds(int64_t(s * 1000.0));
}

}  // namespace nascent::dist
