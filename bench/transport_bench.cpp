#include "bench/transport_bench.hpp"

#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.hpp"
#include "bench/peer_process.hpp"
#include "transport/endpoint.hpp"
#include "transport/host_buffer.hpp"

namespace dualpath::bench {

const char* to_string(transport_bench_mode m) {
  return m == transport_bench_mode::throughput ? "throughput" : "latency";
}

namespace {

using namespace dualpath::transport;
using clock = std::chrono::steady_clock;

double micros(clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto idx = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(idx, v.size() - 1)];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

// Huge-page backed, pre-faulted host memory, as the runtime registers it.
struct buffer {
  explicit buffer(uint64_t n) : mem(n), size(n), ptr(mem.data()) { std::memset(ptr, 0x5a, n); }
  host_buffer mem;
  uint64_t size;
  std::byte* ptr;
};

// A writing into B: two endpoints of one provider in this process, or B in a peer process.
struct link {
  std::unique_ptr<endpoint> a, b;
  std::unique_ptr<memory_region> src, dst;
  remote_region remote;  // B's region
  uint32_t to_b = 0;

  link(const fabric_options& o, buffer& s, buffer& d) : a(endpoint::open(o)), b(endpoint::open(o)) {
    to_b = a->connect(b->address());
    b->connect(a->address());
    src = a->register_memory(s.ptr, s.size);
    dst = b->register_memory(d.ptr, d.size);
    remote = dst->remote();
  }
  link(const fabric_options& o, buffer& s, const peer_process& peer) : a(endpoint::open(o)) {
    to_b = a->connect(peer.address());
    src = a->register_memory(s.ptr, s.size);
    remote = peer.remote();
  }

  // Progress on both sides (a peer process makes its own); returns A's completions (B must poll too: shm
  // targets do the copy).
  std::vector<completion> poll() {
    if (b) {
      b->poll_completions();
      b->poll_arrivals();
    }
    return a->poll_completions();
  }
};

void check_completion(const completion& c) {
  if (!c.ok) throw std::runtime_error("bench transport: transfer failed: " + c.error);
}

// Deadline for a whole phase: generous, but a broken provider ends with an error, not a hang.
void check_deadline(clock::time_point start, const char* phase) {
  if (clock::now() - start > std::chrono::minutes(5)) {
    throw std::runtime_error(fmt::format("bench transport: {} did not finish within 5 minutes", phase));
  }
}

fabric_options fabric_for(const transport_bench_options& o, bool isolation) {
  fabric_options f;
  f.provider = o.provider;
  f.slice_bytes = o.slice_bytes;
  f.rate_gb_per_s = o.rate_gb_per_s;
  f.isolation = isolation;
  f.kv_share = o.kv_share;
  f.max_inflight = o.max_inflight;
  f.kv_guard_bytes = o.kv_guard_bytes;
  f.local_copies = o.local_copies;
  return f;
}

// Writes total_bytes as Layer Blocks with `depth` outstanding; returns GB/s and per-block latencies.
// With --gather g > 1 each write takes g Layer Blocks from buffer slots that are not next to each other (the
// span's blocks in reverse) into g adjacent blocks, as a pass's fetch of one request's layer does.
double write_blocks(link& l, const transport_bench_options& o, uint64_t span, std::vector<double>& latencies) {
  const uint64_t g = o.gather, run_bytes = g * o.block_bytes;
  const uint64_t writes = o.total_bytes / run_bytes;
  const uint64_t runs = span / run_bytes, slots = span / o.block_bytes;
  const uint64_t depth = std::max<uint64_t>(1, o.depth / g);
  std::vector<clock::time_point> started(writes);
  std::vector<transport::gather_piece> pieces;
  uint64_t submitted = 0, completed = 0;
  const auto t0 = clock::now();
  while (completed < writes) {
    while (submitted < writes && submitted - completed < depth) {
      const uint64_t first = (submitted % runs) * g, off = first * o.block_bytes;
      started[submitted] = clock::now();
      if (g == 1) {
        l.a->write(traffic_class::kv, *l.src, off, l.to_b, l.remote, off, o.block_bytes, submitted);
      } else {
        pieces.clear();
        for (uint64_t k = 0; k < g; ++k) pieces.push_back({(slots - 1 - first - k) * o.block_bytes, o.block_bytes});
        l.a->write_gather(traffic_class::kv, *l.src, pieces, l.to_b, l.remote, off, submitted);
      }
      submitted++;
    }
    for (const auto& c : l.poll()) {
      check_completion(c);
      latencies.push_back(micros(clock::now() - started[c.context]));
      completed++;
    }
    check_deadline(t0, "throughput run");
  }
  const double secs = std::chrono::duration<double>(clock::now() - t0).count();
  return static_cast<double>(writes * run_bytes) / secs / 1e9;
}

// GB/s of `copy` over the same blocks the endpoints write, cycling through the same buffers: the yardsticks
// of a transfer. 0 where a copy fails.
template <class Copy>
double copy_rate(const transport_bench_options& o, buffer& s, buffer& d, Copy copy) {
  const uint64_t blocks = o.total_bytes / o.block_bytes;
  const uint64_t slots = s.size / o.block_bytes;
  const auto t0 = clock::now();
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t off = (i % slots) * o.block_bytes;
    if (!copy(d.ptr + off, s.ptr + off, o.block_bytes)) return 0;
  }
  const double secs = std::chrono::duration<double>(clock::now() - t0).count();
  return static_cast<double>(blocks * o.block_bytes) / secs / 1e9;
}

double memcpy_rate(const transport_bench_options& o, buffer& s, buffer& d) {
  return copy_rate(o, s, d, [](std::byte* to, const std::byte* from, uint64_t n) {
    std::memcpy(to, from, n);
    return true;
  });
}

// The kernel's single copy between address spaces (process_vm_writev, what the shm provider uses for large
// writes): the roof of any transfer through it.
double cma_rate(const transport_bench_options& o, buffer& s, buffer& d) {
  return copy_rate(o, s, d, [](std::byte* to, const std::byte* from, uint64_t n) {
    iovec local{const_cast<std::byte*>(from), n}, remote{to, n};
    return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
  });
}

void run_throughput(const transport_bench_options& o, transport_bench_result& r) {
  const uint64_t span =
      std::max(o.block_bytes, std::min<uint64_t>(o.total_bytes, o.span_bytes) / o.block_bytes * o.block_bytes);
  // Forked first, before this process opens an endpoint.
  const auto peer = o.peer_process ? std::make_unique<peer_process>(fabric_for(o, true), span) : nullptr;
  buffer src(span), dst(span);
  link l = peer ? link(fabric_for(o, true), src, *peer) : link(fabric_for(o, true), src, dst);
  r.fabric_provider = l.a->provider_name();
  if (o.gather > l.a->gather_limit())
    throw user_error(fmt::format("bench transport: --gather {}: {} gathers at most {} pieces a write", o.gather,
                                 r.fabric_provider, l.a->gather_limit()));
  std::vector<double> rates, copies, cma, latencies;
  std::vector<double> warm;
  auto warm_opts = o;
  warm_opts.total_bytes = std::min(o.total_bytes, span);
  write_blocks(l, warm_opts, span, warm);  // first touch of the provider's paths and mappings
  for (uint32_t i = 0; i < o.repeats; ++i) {
    rates.push_back(write_blocks(l, o, span, latencies));
    copies.push_back(memcpy_rate(o, src, dst));
    cma.push_back(cma_rate(o, src, dst));
  }
  r.gb_per_s = median(rates);
  r.memcpy_gb_per_s = median(copies);
  r.cma_gb_per_s = median(cma);
  r.p50_us = percentile(latencies, 0.5);
  r.p99_us = percentile(latencies, 0.99);
}

// One link for the latency mode: kv Layer Blocks cycle through a span, model messages use a slot after it.
struct latency_link {
  uint64_t kv_span, slots;
  buffer src, dst;
  link l;
  latency_link(const transport_bench_options& o, bool isolation)
      : kv_span(std::max<uint64_t>(o.block_bytes * o.depth, 8ull << 20) / o.block_bytes * o.block_bytes),
        slots(kv_span / o.block_bytes),
        src(kv_span + o.message_bytes),
        dst(kv_span + o.message_bytes),
        l(fabric_for(o, isolation), src, dst) {}
};

struct phase_result {
  std::vector<double> latencies;
  uint64_t kv_bytes = 0;
  double kv_seconds = 0;
};

// Sends `count` model messages one at a time (each after the previous completed and a pause); with
// `kv_load`, kv Layer Blocks are kept `depth` deep the whole time and drained at the end.
void model_phase(const transport_bench_options& o, latency_link& ll, bool kv_load, uint32_t count, phase_result& out) {
  constexpr uint64_t model_tag = 1ull << 63;
  auto& l = ll.l;
  uint64_t kv_submitted = 0, kv_done = 0, kv_bytes = 0;
  const auto pause = std::chrono::microseconds(o.gap_us);
  const auto t0 = clock::now();
  auto top_up = [&] {
    while (kv_load && kv_submitted - kv_done < o.depth) {
      const uint64_t off = (kv_submitted % ll.slots) * o.block_bytes;
      l.a->write(traffic_class::kv, *l.src, off, l.to_b, l.dst->remote(), off, o.block_bytes, kv_submitted++);
    }
  };
  auto drain = [&](bool& model_done) {
    for (const auto& c : l.poll()) {
      check_completion(c);
      if (c.context & model_tag) {
        model_done = true;
      } else {
        kv_done++;
        kv_bytes += o.block_bytes;
      }
    }
  };
  bool ignored = false;
  auto spin_until = [&](clock::time_point until) {
    while (clock::now() < until) {
      drain(ignored);
      top_up();
    }
  };
  // Let the kv stream reach its steady state before measuring.
  top_up();
  if (kv_load) spin_until(clock::now() + std::chrono::milliseconds(20));
  const auto kv_t0 = clock::now();
  const uint64_t kv_bytes0 = kv_bytes;
  for (uint32_t m = 0; m < count; ++m) {
    const auto start = clock::now();
    l.a->write(traffic_class::model, *l.src, ll.kv_span, l.to_b, l.dst->remote(), ll.kv_span, o.message_bytes,
               model_tag | m);
    bool done = false;
    while (!done) {
      drain(done);
      top_up();
      check_deadline(t0, "latency run");
    }
    out.latencies.push_back(micros(clock::now() - start));
    spin_until(clock::now() + pause);
  }
  out.kv_seconds += std::chrono::duration<double>(clock::now() - kv_t0).count();
  out.kv_bytes += kv_bytes - kv_bytes0;
  while (kv_done < kv_submitted) {  // the endpoints go back to idle for the next phase
    drain(ignored);
    check_deadline(t0, "latency drain");
  }
}

// The three phases run interleaved in rounds, so a busy spell of the machine hits all of them alike.
void run_latency(const transport_bench_options& o, transport_bench_result& r) {
  latency_link isolated(o, true), shared(o, false);
  r.fabric_provider = isolated.l.a->provider_name();
  phase_result idle, iso, fifo;
  constexpr uint32_t rounds = 10;
  for (uint32_t round = 0; round < rounds; ++round) {
    const uint32_t count = o.messages / rounds + (round < o.messages % rounds ? 1 : 0);
    if (count == 0) continue;
    model_phase(o, isolated, false, count, idle);
    model_phase(o, isolated, true, count, iso);
    model_phase(o, shared, true, count, fifo);
  }
  r.idle_p50_us = percentile(idle.latencies, 0.5);
  r.idle_p99_us = percentile(idle.latencies, 0.99);
  r.isolated_p50_us = percentile(iso.latencies, 0.5);
  r.isolated_p99_us = percentile(iso.latencies, 0.99);
  r.isolated_kv_gb_per_s = iso.kv_seconds > 0 ? static_cast<double>(iso.kv_bytes) / iso.kv_seconds / 1e9 : 0;
  r.shared_p50_us = percentile(fifo.latencies, 0.5);
  r.shared_p99_us = percentile(fifo.latencies, 0.99);
  r.shared_kv_gb_per_s = fifo.kv_seconds > 0 ? static_cast<double>(fifo.kv_bytes) / fifo.kv_seconds / 1e9 : 0;
}

}  // namespace

transport_bench_result run_transport_bench(const transport_bench_options& in) {
  auto o = in;
  if (o.block_bytes == 0) o.block_bytes = o.slice_bytes;
  if (o.slice_bytes == 0 || o.block_bytes == 0) throw user_error("bench transport: --slice-bytes must be positive");
  if (o.block_bytes % 8 != 0) throw user_error("bench transport: --block-bytes must be a multiple of 8");
  if (o.total_bytes < o.block_bytes) {
    throw user_error(fmt::format("bench transport: --total-bytes {} is smaller than one block ({} bytes)",
                                 o.total_bytes, o.block_bytes));
  }
  if (o.gather == 0 || o.gather > transport::endpoint::max_gather || o.gather * o.block_bytes > o.slice_bytes ||
      o.gather * o.block_bytes > o.total_bytes) {
    throw user_error(fmt::format("bench transport: --gather {} must be 1 to {}, its blocks within one slice ({} B)",
                                 o.gather, transport::endpoint::max_gather, o.slice_bytes));
  }
  if (o.depth == 0 || o.repeats == 0 || o.messages == 0 || o.max_inflight == 0) {
    throw user_error("bench transport: --depth, --repeats, --messages and --max-inflight must be positive");
  }
  if (o.message_bytes == 0 || o.message_bytes % 8 != 0) {
    throw user_error("bench transport: --message-bytes must be a positive multiple of 8");
  }
  transport_bench_result r;
  r.options = o;
  if (o.mode == transport_bench_mode::throughput) {
    run_throughput(o, r);
  } else {
    run_latency(o, r);
  }
  return r;
}

std::string transport_bench_result::to_json() const {
  nlohmann::json j;
  j["provider"] = options.provider;
  j["fabric_provider"] = fabric_provider;
  j["mode"] = to_string(options.mode);
  j["slice_bytes"] = options.slice_bytes;
  j["block_bytes"] = options.block_bytes;
  j["depth"] = options.depth;
  j["gather"] = options.gather;
  j["local_copies"] = options.local_copies;
  j["peer_process"] = options.peer_process;
  j["rate_gb_per_s"] = options.rate_gb_per_s;
  if (options.mode == transport_bench_mode::throughput) {
    j["total_bytes"] = options.total_bytes;
    j["span_bytes"] = options.span_bytes;
    j["gb_per_s"] = gb_per_s;
    j["memcpy_gb_per_s"] = memcpy_gb_per_s;
    j["ratio_to_memcpy"] = memcpy_gb_per_s > 0 ? gb_per_s / memcpy_gb_per_s : 0;
    j["cma_gb_per_s"] = cma_gb_per_s;
    j["ratio_to_cma"] = cma_gb_per_s > 0 ? gb_per_s / cma_gb_per_s : 0;
    j["p50_us"] = p50_us;
    j["p99_us"] = p99_us;
  } else {
    j["message_bytes"] = options.message_bytes;
    j["messages"] = options.messages;
    j["idle_p50_us"] = idle_p50_us;
    j["idle_p99_us"] = idle_p99_us;
    j["isolated_p50_us"] = isolated_p50_us;
    j["isolated_p99_us"] = isolated_p99_us;
    j["isolated_kv_gb_per_s"] = isolated_kv_gb_per_s;
    j["shared_p50_us"] = shared_p50_us;
    j["shared_p99_us"] = shared_p99_us;
    j["shared_kv_gb_per_s"] = shared_kv_gb_per_s;
    j["isolated_p99_over_idle"] = idle_p99_us > 0 ? isolated_p99_us / idle_p99_us : 0;
  }
  return j.dump(2) + "\n";
}

std::string transport_bench_result::to_text() const {
  const auto& o = options;
  std::string out =
      fmt::format("provider {} ({})  slice {} B  block {} B  depth {}{}  cap {}\n", o.provider, fabric_provider,
                  o.slice_bytes, o.block_bytes, o.depth, o.gather > 1 ? fmt::format("  gather {}", o.gather) : "",
                  o.rate_gb_per_s > 0 ? fmt::format("{} GB/s", o.rate_gb_per_s) : "none");
  if (o.mode == transport_bench_mode::throughput) {
    out += fmt::format("writes  {:8.2f} GB/s   memcpy {:8.2f} GB/s   ratio {:.2f}\n", gb_per_s, memcpy_gb_per_s,
                       memcpy_gb_per_s > 0 ? gb_per_s / memcpy_gb_per_s : 0);
    out += fmt::format("block completion latency  p50 {:.1f} us  p99 {:.1f} us\n", p50_us, p99_us);
  } else {
    out += fmt::format("model message {} B x {}\n", o.message_bytes, o.messages);
    out += fmt::format("{:<22} {:>10} {:>10} {:>12}\n", "", "p50 us", "p99 us", "kv GB/s");
    out += fmt::format("{:<22} {:>10.1f} {:>10.1f} {:>12}\n", "idle", idle_p50_us, idle_p99_us, "-");
    out += fmt::format("{:<22} {:>10.1f} {:>10.1f} {:>12.2f}\n", "kv load, isolation on", isolated_p50_us,
                       isolated_p99_us, isolated_kv_gb_per_s);
    out += fmt::format("{:<22} {:>10.1f} {:>10.1f} {:>12.2f}\n", "kv load, isolation off", shared_p50_us, shared_p99_us,
                       shared_kv_gb_per_s);
    out += fmt::format("isolated p99 / idle p99 = {:.2f}\n", idle_p99_us > 0 ? isolated_p99_us / idle_p99_us : 0);
  }
  return out;
}

}  // namespace dualpath::bench
