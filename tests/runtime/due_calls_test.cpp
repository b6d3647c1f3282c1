// runtime/due_calls.hpp: write-backs answered when the emulated SNIC would have sent them.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/due_calls.hpp"

using dualpath::runtime::due_calls;
using namespace std::chrono_literals;

TEST_CASE("due calls run at their time, in time order, and never before it") {
  due_calls calls;
  std::mutex m;
  std::vector<int> order;
  std::vector<due_calls::clock::time_point> ran(3);
  const auto t0 = due_calls::clock::now();
  const due_calls::clock::time_point when[3] = {t0 + 60ms, t0 + 20ms, t0 + 40ms};
  for (int i = 0; i < 3; ++i)
    calls.at(when[i], [&, i] {
      std::lock_guard<std::mutex> g(m);
      order.push_back(i);
      ran[size_t(i)] = due_calls::clock::now();
    });
  for (int k = 0; k < 500 && calls.waiting() > 0; ++k) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(5ms);
  std::lock_guard<std::mutex> g(m);
  CHECK(order == std::vector<int>{1, 2, 0});
  for (int i = 0; i < 3; ++i) CHECK(ran[size_t(i)] >= when[i]);
}

TEST_CASE("due calls: one already due runs at once; calls due together keep the order given") {
  due_calls calls;
  std::mutex m;
  std::vector<int> order;
  const auto past = due_calls::clock::now() - 1s;
  for (int i = 0; i < 5; ++i)
    calls.at(past, [&, i] {
      std::lock_guard<std::mutex> g(m);
      order.push_back(i);
    });
  for (int k = 0; k < 500 && calls.waiting() > 0; ++k) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(5ms);
  std::lock_guard<std::mutex> g(m);
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("due calls: stopping runs every call still waiting, and a call given after the stop runs at once") {
  std::atomic<int> ran{0};
  {
    due_calls calls;
    for (int i = 0; i < 4; ++i) calls.at(due_calls::clock::now() + 1h, [&] { ++ran; });
    CHECK(calls.waiting() == 4);
    calls.stop();
    CHECK(ran == 4);
    CHECK(calls.waiting() == 0);
    calls.at(due_calls::clock::now() + 1h, [&] { ++ran; });
    CHECK(ran == 5);
  }
  CHECK(ran == 5);
}
