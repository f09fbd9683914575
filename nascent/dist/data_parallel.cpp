#include "nascent/dist/data_parallel.h"

#include <functional>
#include <string>

#include <fmt/format.h>

#include "nascent/autodiff/autodiff.h"
#include "nascent/core/ops.h"

namespace nascent::dist {

namespace {

// A fingerprint of the parameters' names, shapes and dtypes (FNV-1a), as
// three i32 (count, low and high word) for an all_gather.
std::vector<int32_t> fingerprint(const std::vector<nn::NamedTensor>& params) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  for (const nn::NamedTensor& p : params) {
    mix(p.name);
    mix(p.tensor->to_string());
  }
  return {int32_t(params.size()), int32_t(uint32_t(h)),
          int32_t(uint32_t(h >> 32))};
}

}  // namespace

DataParallel::DataParallel(Communicator& comm, nn::Module& module,
                           optim::Optimizer& optimizer,
                           DataParallelOptions options)
    : comm_(comm), optimizer_(optimizer), params_(optimizer.params()) {
  std::vector<nn::NamedTensor> owned = module.named_parameters();
  bool same = owned.size() == params_.size();
  for (size_t i = 0; same && i < owned.size(); ++i) {
    same = owned[i].tensor == params_[i].tensor;
  }
  if (!same) {
    throw ValueError(fmt::format(
        "DataParallel: the optimizer's {} parameters are not the module's {} "
        "({})",
        params_.size(), owned.size(), module.describe()));
  }
  if (params_.empty()) {
    throw ValueError("DataParallel: the module has no parameters");
  }
  autodiff::NoGradGuard no_grad;
  Backend& backend = params_[0].tensor->backend();
  const std::vector<int32_t> mine = fingerprint(params_);
  const std::vector<int32_t> all =
      comm_.all_gather(from_vector(mine, Shape{3}, backend))
          .to_vector<int32_t>();
  for (int r = 0; r < comm_.world_size(); ++r) {
    for (int k = 0; k < 3; ++k) {
      if (all[size_t(r) * 3 + size_t(k)] != all[size_t(k)]) {
        throw ValueError(fmt::format(
            "DataParallel: rank {} has other parameters than rank 0 ({} and {} "
            "tensors, or other names, shapes or dtypes); every rank must build "
            "the same model",
            r, all[size_t(r) * 3], all[0]));
      }
    }
  }
  // Every rank starts from rank 0's values (and buffers, such as a batch
  // norm's running statistics).
  for (const nn::NamedTensor& p : params_) {
    assign(*p.tensor, comm_.broadcast(*p.tensor, 0));
  }
  for (const nn::NamedTensor& b : module.named_buffers()) {
    assign(*b.tensor, comm_.broadcast(*b.tensor, 0));
  }
  // Buckets in reverse parameter order: backward finishes the last layers'
  // gradients first.
  bucket_of_.resize(params_.size());
  size_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& t = *params_[k].tensor;
    const size_t n = size_t(t.numel()) * t.itemsize();
    if (buckets_.empty() || buckets_.back().dtype != t.dtype() ||
        (bytes > 0 && bytes + n > options.bucket_bytes)) {
      buckets_.push_back(Bucket{{}, t.dtype()});
      bytes = 0;
    }
    buckets_.back().params.push_back(k);
    bucket_of_[k] = buckets_.size() - 1;
    bytes += n;
  }
}

std::vector<Tensor> DataParallel::gradients(const Tensor& loss, int64_t local,
                                            int64_t total) {
  if (local < 0 || total <= 0 || local > total ||
      loss.defined() != (local > 0)) {
    throw ValueError(fmt::format(
        "DataParallel: {} of {} examples with {} loss; the loss is defined "
        "exactly when this rank has examples",
        local, total, loss.defined() ? "a" : "no"));
  }
  const double weight = double(local) / double(total);
  const size_t n = params_.size();
  std::vector<Tensor> ready(n);
  std::vector<size_t> missing(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    missing[b] = buckets_[b].params.size();
  }
  std::vector<std::unique_ptr<Work>> works;
  // Buckets start in order, on every rank the same, whatever order backward
  // finishes their gradients in.
  auto launch = [&] {
    autodiff::NoGradGuard no_grad;
    while (works.size() < buckets_.size() && missing[works.size()] == 0) {
      const Bucket& b = buckets_[works.size()];
      std::vector<Tensor> flat;
      for (size_t k : b.params) flat.push_back(ready[k].reshape({-1}));
      Tensor sum = flat.size() == 1 ? flat[0] : cat(flat);
      works.push_back(comm_.all_reduce_async(sum * weight, Reduction::sum));
    }
    for (auto& w : works) w->test();
  };
  auto on_ready = [&](size_t i, const Tensor& g) {
    ready[i] = g;
    --missing[bucket_of_[i]];
    launch();
  };
  if (loss.defined()) {
    std::vector<Tensor> inputs;
    for (const nn::NamedTensor& p : params_) inputs.push_back(*p.tensor);
    autodiff::grad({loss}, inputs, on_ready);
  } else {
    autodiff::NoGradGuard no_grad;
    for (size_t i = n; i-- > 0;) on_ready(i, zeros_like(*params_[i].tensor));
  }
  std::vector<Tensor> out(n);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Tensor sum = works[b]->wait();
    int64_t at = 0;
    for (size_t k : buckets_[b].params) {
      const Tensor& p = *params_[k].tensor;
      out[k] = sum.narrow(0, at, p.numel()).view(p.shape());
      at += p.numel();
    }
  }
  return out;
}

void DataParallel::step(const Tensor& loss, int64_t local, int64_t total) {
  std::vector<Tensor> grads = gradients(loss, local, total);
  autodiff::NoGradGuard no_grad;
  optimizer_.step(grads);
}

}  // namespace nascent::dist
