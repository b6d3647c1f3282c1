#include "bench/storage_bench.hpp"

#include <cmath>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/status.hpp"
#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "storage/snic_gate.hpp"

namespace dualpath::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace dualpath::storage;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(std::llround(p * double(v.size() - 1))))];
}

// The buffered pages of the block files, if reads fall back to buffered I/O.
void drop_cache(const std::string& dir, const std::vector<block_key>& keys) {
  for (block_key k : keys) {
    const int fd = ::open(block_path(dir, k).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

struct read_pass {
  double gb_per_s = 0;
  std::vector<double> latencies_us;
};

// Reads every key once with `depth` reads outstanding, reusing `depth` buffers. `reader` is the
// store itself or an SNIC gate in front of it.
template <class Reader>
read_pass read_all(Reader& reader, const block_store& store, const std::vector<block_key>& keys, uint32_t depth) {
  std::vector<aligned_buffer> bufs;
  for (uint32_t i = 0; i < depth; ++i) bufs.push_back(make_aligned_buffer(store.read_buffer_bytes()));
  std::vector<uint64_t> free_slots;
  for (uint64_t i = 0; i < depth; ++i) free_slots.push_back(i);
  std::vector<clock_type::time_point> started(depth);
  read_pass pass;
  size_t next = 0, done = 0;
  uint64_t bytes = 0;
  const auto t0 = clock_type::now();
  const auto deadline = t0 + std::chrono::minutes(10);
  while (done < keys.size()) {
    std::vector<read_request> batch;
    while (next < keys.size() && !free_slots.empty()) {
      const uint64_t slot = free_slots.back();
      free_slots.pop_back();
      started[slot] = clock_type::now();
      batch.push_back({keys[next++], bufs[slot].get(), slot});
    }
    reader.submit(std::move(batch));
    for (const auto& c : reader.poll(std::chrono::milliseconds(100))) {
      if (!c.ok()) throw std::runtime_error(fmt::format("benchmark read of {} failed: {}", key_hex(c.key), c.message));
      pass.latencies_us.push_back(
          std::chrono::duration<double, std::micro>(clock_type::now() - started[c.user_data]).count());
      bytes += c.bytes_read;
      free_slots.push_back(c.user_data);
      ++done;
    }
    if (clock_type::now() > deadline) throw std::runtime_error("benchmark reads did not finish in 10 minutes");
  }
  pass.gb_per_s = double(bytes) / seconds_since(t0) / 1e9;
  return pass;
}

// Runs fio's io_uring read of the store's own block files (every file under `dir`, one read of `bs` each)
// with the same depth: the same bytes at the same places on the disk, where a file fio lays out beside
// them is other bytes, written at another time.
double run_fio(const std::string& dir, uint64_t bs, uint32_t depth, bool direct, std::string* err) {
  const std::string cmd = fmt::format(
      "fio --name=dualpath-bench --opendir='{}' --rw=read --bs={} --iodepth={} --direct={} "
      "--ioengine=io_uring --output-format=json 2>&1",
      dir, bs, depth, direct ? 1 : 0);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *err = "cannot start fio";
    return 0;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  const auto brace = out.find('{');
  if (rc != 0 || brace == std::string::npos) {
    *err = fmt::format("fio failed (exit {}): {}", rc, out.substr(0, 200));
    return 0;
  }
  try {
    const auto j = nlohmann::json::parse(out.substr(brace));
    return j.at("jobs").at(0).at("read").at("bw_bytes").get<double>() / 1e9;
  } catch (const std::exception& e) {
    *err = fmt::format("cannot parse fio output: {}", e.what());
    return 0;
  }
}

}  // namespace

storage_bench_result run_storage_bench(const storage_bench_options& o) {
  if (o.dir.empty()) throw user_error("bench storage: --dir is required");
  if (o.blocks == 0) throw user_error("bench storage: --blocks must be > 0");
  if (o.depth == 0 || o.depth > 4096) throw user_error("bench storage: --depth must be in 1..4096");
  if (o.layers == 0 || o.block_bytes % (uint64_t(o.layers) * 64) != 0)
    throw user_error(fmt::format("bench storage: --block-bytes {} is not a multiple of layers x 64 tokens ({})",
                                 o.block_bytes, uint64_t(o.layers) * 64));
  if (o.repeats == 0) throw user_error("bench storage: --repeats must be > 0");
  if (o.cap_gb_per_s < 0) throw user_error("bench storage: --cap must be >= 0");

  block_format f{0xbe9c4, o.layers, 64, uint32_t(o.block_bytes / o.layers / 64)};
  f.validate();
  if (double(f.file_bytes()) * o.blocks > 64e9)
    throw user_error("bench storage: --blocks x --block-bytes exceeds 64 GB");
  const std::string work = fmt::format("{}/dualpath-bench-{}", o.dir, ::getpid());
  std::error_code ec;
  std::filesystem::create_directories(work, ec);
  if (ec) throw user_error(fmt::format("bench storage: cannot create {}: {}", work, ec.message()));
  struct cleanup {
    std::string dir;
    ~cleanup() {
      std::error_code e;
      std::filesystem::remove_all(dir, e);
    }
  } cleanup_guard{work};

  storage_bench_result r;
  r.block_bytes = o.block_bytes;
  r.file_bytes = f.file_bytes();
  r.blocks = o.blocks;
  r.depth = o.depth;

  store_options so;
  so.dir = work + "/store";
  so.format = f;
  so.queue_depth = o.depth;
  so.fsync = o.fsync;
  auto store = block_store::open(so);

  // Writes: one chain of distinct blocks.
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < o.blocks; ++i) ids.push_back(i);
  const auto keys = block_keys_from_ids(ids);
  std::vector<std::byte> payload(f.payload_bytes());
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(i * 131 + 7);
  const auto tw = clock_type::now();
  block_key parent = 0;
  for (block_key k : keys) {
    const auto w = store->write(k, parent, payload.data());
    if (!w.ok()) throw user_error(fmt::format("bench storage: write failed in {}: {}", so.dir, w.message()));
    parent = k;
  }
  r.write_gb_per_s = double(f.file_bytes()) * o.blocks / seconds_since(tw) / 1e9;

  // Reads, interleaved with fio runs on the same files so both see the same disk conditions; medians over
  // passes. Each pass runs the store, the store through an uncapped SNIC gate and fio in an order that
  // rotates, so none of the three always runs first or always follows another (with the order fixed, five
  // runs of three passes put the gate at 0.84-1.02 of fio and the store at 0.76-1.16). The key order rotates
  // between passes too.
  std::string fio_err = o.fio ? "" : "fio not run";
  bool fio_direct = true;
  std::vector<double> pair_ratios, gate_ratios;
  const uint64_t reads_before = store->stats().reads;
  auto order = keys;
  std::vector<double> lat;
  for (uint32_t rep = 0; rep < o.repeats; ++rep) {
    std::rotate(order.begin(), order.begin() + (order.size() / 3), order.end());
    double ours = 0, gated = 0, fio = 0;
    // Each pass starts with the files out of the page cache (fio's only when it runs).
    auto read_direct = [&] {
      drop_cache(so.dir, keys);
      auto pass = read_all(*store, *store, order, o.depth);
      ours = pass.gb_per_s;
      lat.insert(lat.end(), pass.latencies_us.begin(), pass.latencies_us.end());
    };
    auto read_gated = [&] {  // it should cost nothing
      drop_cache(so.dir, keys);
      snic_gate gate(*store, 0, o.depth);
      gated = read_all(gate, *store, order, o.depth).gb_per_s;
    };
    auto read_fio = [&] {
      if (!fio_err.empty()) return;
      drop_cache(so.dir, keys);
      fio = run_fio(so.dir, f.file_bytes(), o.depth, fio_direct, &fio_err);
      if (fio == 0 && fio_direct && rep == 0) {  // O_DIRECT refused here (old tmpfs): buffered, as our reads
        fio_err.clear();
        fio_direct = false;
        fio = run_fio(so.dir, f.file_bytes(), o.depth, fio_direct, &fio_err);
      }
    };
    const std::array<std::function<void()>, 3> runs{read_direct, read_gated, read_fio};
    for (uint32_t step = 0; step < 3; ++step) runs[(rep + step) % 3]();
    r.pass_read.push_back(ours);
    r.pass_gate.push_back(gated);
    if (fio > 0) {
      r.pass_fio.push_back(fio);
      pair_ratios.push_back(ours / fio);  // runs of one pass saw the same disk conditions
      gate_ratios.push_back(gated / fio);
    }
  }
  r.read_gb_per_s = median(r.pass_read);
  r.gate_read_gb_per_s = median(r.pass_gate);
  r.read_p50_us = percentile(lat, 0.5);
  r.read_p99_us = percentile(lat, 0.99);
  r.direct_io = store->stats().direct_io;
  r.io_uring = store->stats().io_uring;
  r.fio_read_gb_per_s = median(r.pass_fio);
  r.read_vs_fio = median(pair_ratios);
  r.gate_vs_fio = median(gate_ratios);
  r.verified_blocks = store->stats().reads - reads_before;
  r.fio_direct = fio_direct;
  r.fio_note =
      fio_err.empty()
          ? fmt::format(
                "fio --opendir=<the block files> --rw=read --ioengine=io_uring --direct={} --bs={} --iodepth={}",
                fio_direct ? 1 : 0, f.file_bytes(), o.depth)
          : fio_err;
  if (o.fio && !fio_err.empty()) spdlog::warn("bench storage: {}", fio_err);

  if (o.cap_gb_per_s > 0) {
    // Read cap_bytes through a capped gate, cycling over the stored blocks.
    const uint64_t n = std::max<uint64_t>(1, (o.cap_bytes + f.file_bytes() - 1) / f.file_bytes());
    if (double(n) * f.file_bytes() > 8e9) throw user_error("bench storage: --cap-bytes above 8 GB");
    std::vector<aligned_buffer> bufs;
    std::vector<read_request> batch;
    for (uint64_t i = 0; i < n; ++i) {
      bufs.push_back(make_aligned_buffer(f.file_bytes()));
      batch.push_back({keys[i % keys.size()], bufs.back().get(), i});
    }
    drop_cache(so.dir, keys);
    snic_gate gate(*store, o.cap_gb_per_s, o.depth);
    const auto tc = clock_type::now();
    gate.submit(batch);
    uint64_t got = 0, bytes = 0;
    while (got < n && seconds_since(tc) < 600) {
      for (const auto& c : gate.poll(std::chrono::milliseconds(50))) {
        ++got;
        bytes += c.bytes_read;
      }
    }
    r.cap_seconds = seconds_since(tc);
    r.cap_bytes = bytes;
    r.cap_gb_per_s = o.cap_gb_per_s;
    r.cap_expected_seconds = double(bytes) / (o.cap_gb_per_s * 1e9);
  }
  store.reset();

  return r;
}

std::string storage_bench_result::to_json() const {
  nlohmann::json j;
  j["block_bytes"] = block_bytes;
  j["file_bytes"] = file_bytes;
  j["blocks"] = blocks;
  j["depth"] = depth;
  j["direct_io"] = direct_io;
  j["io_uring"] = io_uring;
  j["write_gb_per_s"] = write_gb_per_s;
  j["read_gb_per_s"] = read_gb_per_s;
  j["read_p50_us"] = read_p50_us;
  j["gate_read_gb_per_s"] = gate_read_gb_per_s;
  j["read_p99_us"] = read_p99_us;
  if (fio_read_gb_per_s > 0) {  // fio ran: its figures; otherwise only the note says why not
    j["fio_read_gb_per_s"] = fio_read_gb_per_s;
    j["fio_direct"] = fio_direct;
    j["read_vs_fio"] = read_vs_fio;
    j["gate_vs_fio"] = gate_vs_fio;
  }
  j["passes_gb_per_s"] = {{"read", pass_read}, {"gate", pass_gate}, {"fio", pass_fio}};
  j["fio_note"] = fio_note;
  j["verified_blocks"] = verified_blocks;
  if (cap_gb_per_s > 0) {
    j["cap_gb_per_s"] = cap_gb_per_s;
    j["cap_bytes"] = cap_bytes;
    j["cap_seconds"] = cap_seconds;
    j["cap_expected_seconds"] = cap_expected_seconds;
  }
  return j.dump(2) + "\n";
}

std::string storage_bench_result::to_text() const {
  std::string s = fmt::format("blocks {} x {} B payload ({} B files), depth {}, {} reads through {}\n", blocks,
                              block_bytes, file_bytes, depth, direct_io ? "O_DIRECT" : "buffered",
                              io_uring ? "io_uring" : "a blocking thread pool");
  s += fmt::format("write   {:8.3f} GB/s\n", write_gb_per_s);
  s += fmt::format("checks  every read's header and layer checksums (xxh3): {} blocks verified\n", verified_blocks);
  s += fmt::format("read    {:8.3f} GB/s   p50 {:.0f} us   p99 {:.0f} us\n", read_gb_per_s, read_p50_us, read_p99_us);
  s += fmt::format("gate    {:8.3f} GB/s   (uncapped SNIC gate, ratio {:.2f})\n", gate_read_gb_per_s,
                   gate_read_gb_per_s / read_gb_per_s);
  if (fio_read_gb_per_s > 0)
    s += fmt::format(
        "fio     {:8.3f} GB/s   ours/fio {:.2f}, through the gate {:.2f} (medians of per-pass ratios)   ({})\n",
        fio_read_gb_per_s, read_vs_fio, gate_vs_fio, fio_note);
  else s += fmt::format("fio     not measured ({})\n", fio_note);
  if (cap_gb_per_s > 0)
    s += fmt::format("cap     {} B at {} GB/s took {:.3f} s (expected {:.3f} s, ratio {:.3f})\n", cap_bytes,
                     cap_gb_per_s, cap_seconds, cap_expected_seconds, cap_seconds / cap_expected_seconds);
  return s;
}

}  // namespace dualpath::bench
