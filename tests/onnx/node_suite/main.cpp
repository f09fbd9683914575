// ONNX's backend node tests against nascent: every case under DIR (as
// `python -m onnx.backend.test.cmd_tools generate-data` writes them: each
// DIR/test_x/model.onnx with test_data_set_*/input_*.pb and output_*.pb)
// is loaded and run; a case whose model nascent refuses as unsupported is
// counted, not failed. Outputs are compared as ONNX's runner does: same
// dtype and shape, |got - want| <= atol + rtol * |want| (rtol 1e-3, atol
// 1e-7), NaN where NaN is expected.
//
//   nascent_onnx_node_suite DIR [--device cpu] [--filter SUBSTRING] [-v]
//                           [--fuzz ROUNDS]
//
// Exits non-zero if any supported case fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include <fmt/format.h>

#include "nascent/backends/device.h"
#include "nascent/io/file.h"
#include "nascent/onnx/model.h"

namespace fs = std::filesystem;
using namespace nascent;

namespace {

Tensor read_pb(const fs::path& p, Backend& backend) {
  auto file = io::MappedFile::open(p.string());
  onnx::TensorProto t = onnx::parse_tensor(file->bytes(), p.string());
  return onnx::to_tensor(t, backend, p.parent_path().string(), p.string());
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& stem) {
  std::vector<fs::path> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / fmt::format("{}_{}.pb", stem, i);
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

// Empty when they match, else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return fmt::format("dtype {} != expected {}", name(got.dtype()),
                       name(want.dtype()));
  }
  if (got.shape() != want.shape()) {
    return fmt::format("shape {} != expected {}", to_string(got.shape()),
                       to_string(want.shape()));
  }
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const double rtol = 1e-3, atol = 1e-7;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = std::isnan(w[i]) ? std::isnan(g[i])
              : std::isinf(w[i])
                  ? g[i] == w[i]
                  : std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return {};
  return fmt::format("{} of {} values differ, first at {}: {} != expected {}",
                     bad, g.size(), first, g[first], w[first]);
}

}  // namespace

// Each case's model.onnx, corrupted `rounds` times (bytes set, bits
// flipped, cut short, bytes inserted; a fixed seed), loaded and, if it
// loads, run on the case's first inputs: every failure must be a
// nascent::Error; anything else, or a crash, fails the run.
int fuzz(const std::vector<fs::path>& cases, Backend& backend, int rounds) {
  std::mt19937 rng(19);
  size_t loaded = 0, ran = 0, refused = 0, escaped = 0;
  for (const fs::path& dir : cases) {
    auto file = io::MappedFile::open((dir / "model.onnx").string());
    const auto bytes = file->bytes();
    const std::string good(reinterpret_cast<const char*>(bytes.data()),
                           bytes.size());
    std::vector<Tensor> xs;
    try {
      for (const auto& p : numbered(dir / "test_data_set_0", "input")) {
        xs.push_back(read_pb(p, backend));
      }
    } catch (const Error&) {
      xs.clear();
    }
    for (int r = 0; r < rounds; ++r) {
      std::string m = good;
      for (int e = 0, edits = 1 + int(rng() % 3); e < edits && !m.empty();
           ++e) {
        size_t at = rng() % m.size();
        switch (rng() % 4) {
          case 0:
            m[at] = char(rng());
            break;
          case 1:
            m[at] = char(uint8_t(m[at]) ^ (1u << (rng() % 8)));
            break;
          case 2:
            m.resize(at);
            break;
          default:
            m.insert(at, 1, char(rng()));
        }
      }
      const std::string what = dir.filename().string() + " (corrupted)";
      try {
        onnx::Model model = onnx::load_bytes(
            {reinterpret_cast<const std::byte*>(m.data()), m.size()}, what,
            dir.string(), backend);
        ++loaded;
        if (model.inputs().size() == xs.size()) {
          model.run(xs);
          ++ran;
        }
      } catch (const Error&) {
        ++refused;
      } catch (const std::exception& e) {
        ++escaped;
        fmt::print("FAILED {}: round {}: not a nascent::Error: {}\n",
                   dir.filename().string(), r, e.what());
      }
    }
  }
  fmt::print(
      "onnx fuzz: {} cases x {} corruptions: {} loaded ({} ran), {} refused "
      "with an Error, {} escaped\n",
      cases.size(), rounds, loaded, ran, refused, escaped);
  return escaped == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr,
               "usage: {} DIR [--device D] [--filter S] [-v] [--fuzz N]\n",
               argv[0]);
    return 2;
  }
  std::string device = "cpu", filter;
  bool verbose = false;
  int fuzz_rounds = 0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc)
      device = argv[++i];
    else if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "-v")
      verbose = true;
    else if (a == "--fuzz" && i + 1 < argc)
      fuzz_rounds = std::atoi(argv[++i]);
  }
  if (!fs::is_directory(argv[1])) {
    fmt::print(stderr, "nascent_onnx_node_suite: {} is not a folder\n",
               argv[1]);
    return 2;
  }
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(device);
  } catch (const Error& e) {
    fmt::print(stderr, "nascent_onnx_node_suite: {}\n", e.what());
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(argv[1])) {
    if (fs::exists(e.path() / "model.onnx") &&
        e.path().filename().string().find(filter) != std::string::npos) {
      cases.push_back(e.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  if (fuzz_rounds > 0) return fuzz(cases, *backend, fuzz_rounds);
  size_t passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, size_t> reasons;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    std::string failure;
    try {
      onnx::Model m = onnx::load((dir / "model.onnx").string(), *backend);
      for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_directory()) continue;
        std::vector<Tensor> xs;
        for (const auto& p : numbered(e.path(), "input")) {
          xs.push_back(read_pb(p, *backend));
        }
        std::vector<Tensor> want;
        for (const auto& p : numbered(e.path(), "output")) {
          want.push_back(read_pb(p, *backend));
        }
        std::vector<Tensor> got = m.run(xs);
        if (got.size() != want.size()) {
          failure =
              fmt::format("{} outputs, expected {}", got.size(), want.size());
        }
        for (size_t k = 0; failure.empty() && k < got.size(); ++k) {
          std::string d = compare(got[k], want[k]);
          if (!d.empty()) failure = fmt::format("output {}: {}", k, d);
        }
        if (!failure.empty()) break;
      }
    } catch (const onnx::UnsupportedError& e) {
      ++unsupported;
      std::string why = e.what();
      if (verbose) fmt::print("unsupported {}: {}\n", name, why);
      // Tallies by operator where the message names one.
      size_t op = why.find("operator ");
      reasons[op != std::string::npos
                  ? why.substr(op + 9, why.find(' ', op + 9) - op - 9)
                  : std::string("(other)")]++;
      continue;
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (failure.empty()) {
      ++passed;
      if (verbose) fmt::print("ok {}\n", name);
    } else {
      ++failed;
      fmt::print("FAILED {}: {}\n", name, failure);
    }
  }
  if (verbose) {
    for (const auto& [op, n] : reasons)
      fmt::print("  unsupported {}: {}\n", op, n);
  }
  fmt::print("onnx node suite on {}: {} cases, {} unsupported\n", device,
             cases.size(), unsupported);
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
