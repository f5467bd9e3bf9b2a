#include "sim/device_io.hpp"

#include <cstring>
#include <fstream>

namespace pipesim::sim {
namespace {

constexpr char kMagic[] = "pipesim-device-run 1\n";

struct StreamOut {
  std::ostream& os;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    os.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint64_t>(v.size()));
    if (!v.empty()) os.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    os.write(s.data(), static_cast<std::streamsize>(s.size()));
  }
};

struct StreamIn {
  std::istream& is;
  bool ok = true;
  template <typename T>
  void pod(T& v) {
    ok = ok && static_cast<bool>(is.read(reinterpret_cast<char*>(&v), sizeof v));
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    uint64_t n = 0;
    pod(n);
    if (!ok || n > (uint64_t{1} << 34) / sizeof(T)) {
      ok = false;
      return;
    }
    v.resize(n);
    if (n) ok = ok && static_cast<bool>(is.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T))));
  }
  void str(std::string& s) {
    uint64_t n = 0;
    pod(n);
    if (!ok || n > (1u << 24)) {
      ok = false;
      return;
    }
    s.resize(n);
    if (n) ok = ok && static_cast<bool>(is.read(s.data(), static_cast<std::streamsize>(n)));
  }
};

// FNV-1a, 64 bit.
struct Fnv {
  uint64_t h = 1469598103934665603ULL;
  void add(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
  }
  template <typename T>
  void pod(const T& v) { add(&v, sizeof v); }
};

}  // namespace

uint64_t stream_fingerprint(const OpStreams& s) {
  Fnv f;
  f.pod(s.ctas), f.pod(s.cluster), f.pod(s.threads), f.pod(s.warps_per_cta), f.pod(s.slots);
  for (const DevOp& op : s.ops) {  // field by field: the padding byte carries nothing
    f.pod(op.kind), f.pod(op.flags), f.pod(op.rank), f.pod(op.slot), f.pod(op.a), f.pod(op.b);
  }
  for (uint64_t o : s.offsets) f.pod(o);
  for (int64_t c : s.init_count) f.pod(c);
  return f.h;
}

bool save_device_run(const std::string& path, const OpStreams& s, const DeviceResult& r, std::string& error) {
  std::ofstream out(path, std::ios::binary);
  StreamOut a{out};
  out.write(kMagic, sizeof kMagic - 1);
  a.pod(stream_fingerprint(s));
  serialize_result(a, r);
  if (!out) error = "cannot write " + path;
  return static_cast<bool>(out);
}

bool load_device_run(const std::string& path, const OpStreams& s, DeviceResult& r, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "no saved device run " + path;
    return false;
  }
  char magic[sizeof kMagic - 1] = {};
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    error = path + " is not a saved device run (pipesim crosscheck --save-device)";
    return false;
  }
  StreamIn a{in};
  uint64_t fp = 0;
  a.pod(fp);
  if (a.ok && fp != stream_fingerprint(s)) {
    error = path + " was saved for other op streams: the scenario, its -D values or the lowering changed since";
    return false;
  }
  serialize_result(a, r);
  if (!a.ok) error = path + " is truncated or damaged";
  return a.ok;
}

}  // namespace pipesim::sim
