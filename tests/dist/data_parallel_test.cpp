// DataParallel, the loader's shards and the launcher's environment in one
// process (a LocalCommunicator); mpi/ runs the same over two ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "dist/model_steps.h"
#include "nascent/backends/cpu/backend.h"
#include "nascent/backends/device.h"
#include "nascent/dist/environment.h"
#include "nascent/dist/mpi.h"
#include "nascent/optim/optimizer.h"

namespace nascent {
namespace {

TEST(Shard, SplitsEvenlyWithTheRemainderFirst) {
  // 10 examples over 4 ranks: 3, 3, 2, 2 from 0, 3, 6, 8.
  const int64_t begins[] = {0, 3, 6, 8}, counts[] = {3, 3, 2, 2};
  for (int r = 0; r < 4; ++r) {
    data::Shard s = data::shard_of(10, r, 4);
    EXPECT_EQ(s.begin, begins[r]);
    EXPECT_EQ(s.count, counts[r]);
  }
  // Fewer examples than ranks: the last ranks get none, at the end.
  EXPECT_EQ(data::shard_of(1, 1, 2).count, 0);
  EXPECT_EQ(data::shard_of(1, 1, 2).begin, 1);
  EXPECT_THROW(data::shard_of(5, 2, 2), ValueError);
  EXPECT_THROW(data::shard_of(5, 0, 0), ValueError);
  EXPECT_THROW(data::shard_of(-1, 0, 1), ValueError);
}

TEST(Shard, LoaderSharesEachBatchOutAndSeesEveryExampleOnce) {
  cpu::Backend cpu;
  const int64_t n = 23;
  std::vector<uint8_t> pixels(static_cast<size_t>(n) * 4);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    labels[size_t(i)] = i;  // The label names the example.
    for (int k = 0; k < 4; ++k) pixels[size_t(i * 4 + k)] = uint8_t(i);
  }
  data::ImageDataset ds(std::move(pixels), {1, 2, 2}, std::move(labels), n);
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int rank = 0; rank < 3; ++rank) {
    data::LoaderOptions o{.batch_size = 8, .seed = 5};
    o.rank = rank;
    o.world_size = 3;
    data::DataLoader loader(ds, o, cpu);
    data::LoaderOptions one = o;
    one.rank = 0;
    one.world_size = 1;
    data::DataLoader whole(ds, one, cpu);
    std::vector<int64_t> order = loader.order(1);
    ASSERT_EQ(order, whole.order(1));
    for (int64_t b = 0; b < loader.num_batches(); ++b) {
      data::Batch mine = loader.batch(order, b);
      data::Batch all = whole.batch(order, b);
      EXPECT_EQ(mine.total, all.labels.numel());
      data::Shard s = data::shard_of(mine.total, rank, 3);
      ASSERT_EQ(mine.labels.numel(), s.count);
      std::vector<int64_t> got = mine.labels.to_vector<int64_t>();
      std::vector<int64_t> want =
          all.labels.narrow(0, s.begin, s.count).to_vector<int64_t>();
      EXPECT_EQ(got, want);
      for (int64_t e : got) ++seen[size_t(e)];
    }
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[size_t(i)], 1) << i;
  data::LoaderOptions bad{.batch_size = 8};
  bad.rank = 3;
  bad.world_size = 3;
  EXPECT_THROW(data::DataLoader(ds, bad, cpu), ValueError);
}

TEST(DataParallel, OneRankTrainsExactlyAsOneProcess) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  auto a = testing::small_model(ad, 1), b = testing::small_model(ad, 1);
  optim::SGD sa(a->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD sb(b->named_parameters(), {.lr = 0.1, .momentum = 0.9});
  dist::LocalCommunicator local;
  // Tiny buckets: every parameter its own, so the bucket logic runs.
  dist::DataParallel ddp(local, *b, sb, {.bucket_bytes = 16});
  EXPECT_EQ(ddp.num_buckets(), 4u);
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = testing::step_batch(ad, step, 9);
    testing::plain_step(*a, sa, x, y);
    testing::parallel_step(*b, ddp, x, y);
  }
  EXPECT_EQ(testing::max_difference(*a, *b), 0.0);
}

TEST(DataParallel, WeightsGradientsByTheShareOfExamples) {
  // Two "ranks" simulated in one process: rank r's weighted gradients,
  // added up, are the whole batch's.
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  auto m = testing::small_model(ad, 3);
  optim::SGD opt(m->named_parameters(), {.lr = 0.1});
  dist::LocalCommunicator local;
  dist::DataParallel ddp(local, *m, opt);
  auto [x, y] = testing::step_batch(ad, 0, 7);
  Tensor whole = nn::cross_entropy((*m)(x), y);
  std::vector<Tensor> want = ddp.gradients(whole, 7, 7);
  std::vector<Tensor> sum;
  for (int r = 0; r < 2; ++r) {
    data::Shard s = data::shard_of(7, r, 2);
    Tensor part = nn::cross_entropy((*m)(x.narrow(0, s.begin, s.count)),
                                    y.narrow(0, s.begin, s.count));
    std::vector<Tensor> g = ddp.gradients(part, s.count, 7);
    for (size_t i = 0; i < g.size(); ++i) {
      if (r == 0) {
        sum.push_back(g[i]);
      } else {
        sum[i] = sum[i] + g[i];
      }
    }
  }
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double> w = want[i].to_vector<double>(),
                        s = sum[i].to_vector<double>();
    for (size_t k = 0; k < w.size(); ++k) EXPECT_NEAR(s[k], w[k], 1e-6);
  }
}

TEST(DataParallel, RefusesBadArguments) {
  cpu::Backend cpu;
  autodiff::Backend ad(cpu);
  auto m = testing::small_model(ad, 3), other = testing::small_model(ad, 4);
  optim::SGD opt(m->named_parameters(), {.lr = 0.1});
  dist::LocalCommunicator local;
  EXPECT_THROW(dist::DataParallel(local, *other, opt), ValueError);
  dist::DataParallel ddp(local, *m, opt);
  auto [x, y] = testing::step_batch(ad, 0, 4);
  Tensor loss = nn::cross_entropy((*m)(x), y);
  EXPECT_THROW(ddp.gradients(loss, 0, 4), ValueError);  // Loss, no examples.
  EXPECT_THROW(ddp.gradients(Tensor(), 2, 4), ValueError);
  EXPECT_THROW(ddp.gradients(loss, 5, 4), ValueError);
  // A rank without examples contributes zeros.
  for (const Tensor& g : ddp.gradients(Tensor(), 0, 4)) {
    for (double v : g.to_vector<double>()) EXPECT_EQ(v, 0.0);
  }
}

TEST(Communicator, LocalReturnsItsInputAndChecksIt) {
  cpu::Backend cpu;
  dist::LocalCommunicator c;
  Tensor x = randn({3, 4}, cpu, 1).transpose();  // A strided view.
  EXPECT_EQ(c.all_reduce(x, dist::Reduction::mean).to_vector<float>(),
            x.to_vector<float>());
  EXPECT_EQ(c.all_gather(x).shape(), (Shape{1, 4, 3}));
  EXPECT_EQ(c.broadcast(x).to_vector<float>(), x.to_vector<float>());
  try {
    c.all_reduce(x.cast(DType::f64));
    FAIL() << "an f64 all_reduce was accepted";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce (local)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("f64[4, 3]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c.all_reduce(x.cast(DType::i32), dist::Reduction::mean),
               DTypeError);
  EXPECT_THROW(c.broadcast(x, 1), ValueError);
  EXPECT_THROW(c.all_reduce(Tensor()), ValueError);
  EXPECT_THROW(make_communicator("gloo", cpu), ValueError);
  EXPECT_EQ(make_communicator("local", cpu)->world_size(), 1);
  // Not a GPU (or no CUDA backend in this build).
  EXPECT_THROW(make_communicator("nccl", cpu), Error);
}

// Sets environment variables for the scope, restoring them after.
class ScopedEnv {
 public:
  using Vars = std::vector<std::pair<std::string, std::string>>;
  explicit ScopedEnv(Vars vars) : vars_(std::move(vars)) {
    for (auto& [k, v] : vars_) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k,
                          old ? std::optional<std::string>(old) : std::nullopt);
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved_) {
      if (v) {
        setenv(k.c_str(), v->c_str(), 1);
      } else {
        unsetenv(k.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(Environment, ReadsTheLaunchersVariables) {
  {
    ScopedEnv env(ScopedEnv::Vars{{"RANK", "3"},
                                  {"WORLD_SIZE", "4"},
                                  {"LOCAL_RANK", "1"},
                                  {"LOCAL_WORLD_SIZE", "2"}});
    dist::Placement p = dist::placement_from_environment();
    EXPECT_EQ(p.rank, 3);
    EXPECT_EQ(p.world_size, 4);
    EXPECT_EQ(p.local_rank, 1);
    EXPECT_EQ(p.local_size, 2);
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"NASCENT_RANK", "1"},
                                  {"NASCENT_WORLD_SIZE", "2"},
                                  {"RANK", "0"},
                                  {"WORLD_SIZE", "8"}});
    EXPECT_EQ(dist::placement_from_environment().world_size, 2);  // First.
  }
  for (auto bad : std::vector<std::pair<std::string, std::string>>{
           {"2", "2"}, {"-1", "2"}, {"x", "2"}, {"0", "0"}, {"1", "2x"}}) {
    ScopedEnv env(ScopedEnv::Vars{{"NASCENT_RANK", bad.first},
                                  {"NASCENT_WORLD_SIZE", bad.second}});
    EXPECT_THROW(dist::placement_from_environment(), ValueError)
        << bad.first << "/" << bad.second;
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"NASCENT_DIST_TIMEOUT", "2.5"}});
    EXPECT_EQ(dist::timeout_from_environment().count(), 2500);
  }
  for (const char* bad : {"0", "-3", "soon", ""}) {
    ScopedEnv env(ScopedEnv::Vars{{"NASCENT_DIST_TIMEOUT", bad}});
    EXPECT_THROW(dist::timeout_from_environment(), ValueError) << bad;
  }
}

}  // namespace
}  // namespace nascent
