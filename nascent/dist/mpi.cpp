#include "nascent/dist/mpi.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "nascent/core/ops.h"

namespace nascent::dist {

bool has_mpi() {
  return true;
}

namespace {

using Clock = std::chrono::steady_clock;

// MPI takes counts as int: longer buffers go in pieces of this many items.
constexpr size_t kPiece = size_t(1) << 30;

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw BackendError(
      fmt::format("dist (mpi): {} failed: {}", call, std::string(text, len)));
}

// MPI is initialised once per process and finalised at exit, unless a
// collective timed out (then ranks may still wait on it, and only abort
// ends the run).
struct Runtime {
  std::once_flag once;
  bool broken = false;

  static Runtime& get() {
    static Runtime r;
    return r;
  }
  void init() {
    std::call_once(once, [this] {
      int done = 0;
      MPI_Initialized(&done);
      if (!done) {
        int provided = 0;
        check_mpi(
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
            "MPI_Init_thread");
        std::atexit([] {
          Runtime& r = get();
          int finalized = 0;
          MPI_Finalized(&finalized);
          if (!finalized && !r.broken) MPI_Finalize();
        });
      }
    });
  }
};

class MpiCommunicator;

// One collective in flight: its host buffer (lent by the communicator,
// whose buffers stay mapped between steps) and requests.
class MpiWork final : public Work {
 public:
  MpiWork(MpiCommunicator& comm, std::string what);
  ~MpiWork() override;
  bool test() override;
  Tensor wait() override;

  std::vector<MPI_Request> requests;
  std::vector<std::byte> bytes;
  std::function<Tensor(MpiWork&)> finish;

 private:
  MpiCommunicator& comm_;
  std::string what_;
  bool done_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    Runtime::get().init();
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as return codes (thrown), not as MPI's abort.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !Runtime::get().broken) MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

  std::unique_ptr<Work> all_reduce_async(const Tensor& x,
                                         Reduction op) override {
    check_reduce(x, op);
    auto w = start("all_reduce", x);
    // f16 and bf16 add up in f32; f32 and i32 as they are.
    const bool integer = x.dtype() == DType::i32;
    const DType wire = integer ? DType::i32 : DType::f32;
    copy_in(x.cast(wire), w->bytes);
    const size_t n = size_t(x.numel());
    for (size_t at = 0; at < n; at += kPiece) {
      add(*w,
          MPI_Iallreduce(MPI_IN_PLACE, w->bytes.data() + at * 4,
                         int(std::min(kPiece, n - at)),
                         integer ? MPI_INT32_T : MPI_FLOAT, MPI_SUM, comm_,
                         &w->requests.emplace_back()),
          "MPI_Iallreduce");
    }
    const float scale = op == Reduction::mean ? 1.0f / float(size_) : 1.0f;
    w->finish = [x, wire, scale](MpiWork& m) {
      if (scale != 1.0f) {
        auto* v = reinterpret_cast<float*>(m.bytes.data());
        for (size_t i = 0; i < m.bytes.size() / 4; ++i) v[i] *= scale;
      }
      return from_data(m.bytes.data(), x.shape(), wire, x.backend())
          .cast(x.dtype());
    };
    return w;
  }

  Tensor broadcast(const Tensor& x, int root) override {
    check("broadcast", x, false, root);
    auto w = start("broadcast", x);
    copy_in(x, w->bytes);
    const size_t n = w->bytes.size();
    for (size_t at = 0; at < n; at += kPiece) {
      add(*w,
          MPI_Ibcast(w->bytes.data() + at, int(std::min(kPiece, n - at)),
                     MPI_BYTE, root, comm_, &w->requests.emplace_back()),
          "MPI_Ibcast");
    }
    w->finish = [x](MpiWork& m) {
      return from_data(m.bytes.data(), x.shape(), x.dtype(), x.backend());
    };
    return w->wait();
  }

  Tensor all_gather(const Tensor& x) override {
    check("all_gather", x, false);
    auto w = start("all_gather", x);
    const size_t each = size_t(x.numel()) * x.itemsize();
    if (each > size_t(INT_MAX)) {
      throw ValueError(fmt::format(
          "all_gather (mpi): {} is over 2 GiB per rank", x.to_string()));
    }
    std::vector<std::byte> mine;
    copy_in(x, mine);
    w->bytes.resize(each * size_t(size_));
    add(*w,
        MPI_Iallgather(mine.data(), int(each), MPI_BYTE, w->bytes.data(),
                       int(each), MPI_BYTE, comm_, &w->requests.emplace_back()),
        "MPI_Iallgather");
    Shape shape = x.shape();
    shape.insert(shape.begin(), size_);
    w->finish = [x, shape](MpiWork& m) {
      return from_data(m.bytes.data(), shape, x.dtype(), x.backend());
    };
    return w->wait();
  }

  void barrier() override {
    MpiWork w(*this, "barrier");
    add(w, MPI_Ibarrier(comm_, &w.requests.emplace_back()), "MPI_Ibarrier");
    w.finish = [](MpiWork&) { return Tensor(); };
    w.wait();
  }

  [[noreturn]] void abort(int code) override {
    Runtime::get().broken = true;
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  // Polls `requests` until they finish; TimeoutError after timeout().
  // Open MPI moves a non-blocking collective on only inside MPI calls (a
  // large one needs many), so the poll is tight while the other ranks are
  // likely to be there; a rank left waiting longer (the others evaluate,
  // or load) alternates 1 ms of polling with 1 ms of sleep, leaving the
  // cores to them.
  void wait_all(std::vector<MPI_Request>& requests, const std::string& what) {
    const auto start = Clock::now();
    auto window = std::chrono::milliseconds(50);
    for (;;) {
      const auto until = Clock::now() + window;
      do {
        if (test_all(requests)) return;
        std::this_thread::yield();
      } while (Clock::now() < until);
      if (Clock::now() - start > timeout()) {
        Runtime::get().broken = true;
        throw TimeoutError(fmt::format(
            "dist (mpi): {} on rank {} of {} waited {:.0f} s for the other "
            "ranks: one may have died or be calling another collective "
            "(NASCENT_DIST_TIMEOUT sets the limit)",
            what, rank_, size_,
            std::chrono::duration<double>(timeout()).count()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      window = std::chrono::milliseconds(1);
    }
  }

  bool test_all(std::vector<MPI_Request>& requests) {
    int flag = 0;
    check_mpi(MPI_Testall(int(requests.size()), requests.data(), &flag,
                          MPI_STATUSES_IGNORE),
              "MPI_Testall");
    return flag != 0;
  }

 private:
  std::unique_ptr<MpiWork> start(const char* op, const Tensor& x) {
    if (Runtime::get().broken) {
      throw BackendError(fmt::format(
          "{} (mpi): an earlier collective timed out; the run must end "
          "(abort)",
          op));
    }
    return std::make_unique<MpiWork>(
        *this, fmt::format("{} of {}", op, x.to_string()));
  }
  static void add(MpiWork& w, int rc, const char* call) {
    if (rc != MPI_SUCCESS) w.requests.pop_back();
    check_mpi(rc, call);
  }
  // The values of x, contiguous, into `out` (resized).
  static void copy_in(const Tensor& x, std::vector<std::byte>& out) {
    const Tensor c = x.contiguous();
    HostBytes h = c.backend().materialize(c);
    const size_t n = size_t(c.numel()) * c.itemsize();
    out.resize(n);
    if (n > 0) {
      std::memcpy(out.data(), h.data + size_t(c.offset()) * c.itemsize(), n);
    }
  }

 public:
  // Host buffers of finished collectives, reused: a fresh one of a few MB
  // costs its page faults on every step.
  std::vector<std::byte> lend() {
    if (spare_.empty()) return {};
    std::vector<std::byte> b = std::move(spare_.back());
    spare_.pop_back();
    return b;
  }
  void give_back(std::vector<std::byte> b) {
    if (spare_.size() < 8 && b.capacity() > 0) spare_.push_back(std::move(b));
  }

 private:
  std::vector<std::vector<std::byte>> spare_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

MpiWork::MpiWork(MpiCommunicator& comm, std::string what)
    : bytes(comm.lend()), comm_(comm), what_(std::move(what)) {}

MpiWork::~MpiWork() {
  // A request still in flight (its wait threw) keeps its buffer.
  if (done_ || requests.empty()) comm_.give_back(std::move(bytes));
}

bool MpiWork::test() {
  if (!done_) done_ = comm_.test_all(requests);
  return done_;
}

Tensor MpiWork::wait() {
  if (!done_) comm_.wait_all(requests, what_);
  done_ = true;
  return finish(*this);
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace nascent::dist
