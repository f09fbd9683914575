// What a Request handle shares with the Scheduler (internal to serve/).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "nascent/serve/scheduler.h"

namespace nascent::serve::detail {

struct RequestState {
  uint64_t id = 0;
  std::vector<tokenizer::TokenId> prompt;
  RequestOptions options;
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
  std::atomic<bool> cancelled{false};

  std::mutex mutex;  // Guards what follows.
  std::condition_variable ready;
  std::deque<Event> events;
  bool finished = false;  // The last event was pushed.
  bool pending = true;    // The last event was not taken yet.

  // Queues an event for the handle (ignored after the last one).
  void push(Event e);
  bool is_finished() {
    std::lock_guard<std::mutex> lock(mutex);
    return finished;
  }
};

}  // namespace nascent::serve::detail
