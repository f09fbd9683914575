// The request handle and the state it shares with the scheduler: an event
// queue under its own mutex, so a client waiting for tokens never holds the
// scheduler's lock, and a cancellation flag the stepper polls.
#include "nascent/serve/request_state.h"

namespace nascent::serve {

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::timeout:
      return "timeout";
    case FinishReason::error:
      return "error";
  }
  return "unknown";
}

namespace detail {

void RequestState::push(Event e) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished) return;  // Nothing after the last event.
    finished = e.done;
    events.push_back(std::move(e));
  }
  ready.notify_all();
}

}  // namespace detail

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

Request::~Request() {
  cancel();
}

uint64_t Request::id() const {
  return state_ ? state_->id : 0;
}

std::optional<Event> Request::next(std::chrono::milliseconds timeout) {
  if (!state_) return std::nullopt;
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->ready.wait_for(lock, timeout, [&] {
    return !state_->events.empty() || (state_->finished && !state_->pending);
  });
  if (state_->events.empty()) return std::nullopt;
  Event e = std::move(state_->events.front());
  state_->events.pop_front();
  if (e.done) state_->pending = false;
  return e;
}

void Request::cancel() {
  if (state_) state_->cancelled.store(true);
}

}  // namespace nascent::serve
