#include "sim/device_io.hpp"

#include <cstring>
#include <fstream>

namespace pipesim::sim {
namespace {

constexpr char kMagic[] = "pipesim-device-run 1\n";

struct OstreamSink {
  std::ostream& os;
  bool write(const void* p, size_t n) { return static_cast<bool>(os.write(static_cast<const char*>(p), static_cast<std::streamsize>(n))); }
};
struct IstreamSource {
  std::istream& is;
  bool read(void* p, size_t n) { return static_cast<bool>(is.read(static_cast<char*>(p), static_cast<std::streamsize>(n))); }
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
  Writer<OstreamSink> a{{out}};
  out.write(kMagic, sizeof kMagic - 1);
  a.pod(stream_fingerprint(s));
  serialize_result(a, r);
  if (!out || !a.ok) error = "cannot write " + path;
  return static_cast<bool>(out) && a.ok;
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
  Reader<IstreamSource> a{{in}};
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
