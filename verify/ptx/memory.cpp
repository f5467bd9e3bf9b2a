// The grid's memory: global pages, kernel parameters, const, per-CTA shared memory (address map in
// machine_impl.hpp), and the warp's address translation with its faults.
#include <algorithm>
#include <cstdio>

#include "model/arch.hpp"
#include "sim/state_hash.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

const uint8_t* zero_page() {
  static const std::unique_ptr<uint8_t[]> zeros(new uint8_t[GlobalMemory::kPageBytes]());
  return zeros.get();
}

}  // namespace

// ---- GlobalMemory --------------------------------------------------------------------------------
void GlobalMemory::add_region(uint64_t begin, uint64_t bytes, std::string name) {
  Region r{begin, begin + bytes, std::move(name), {}};
  auto it = std::upper_bound(regions_.begin(), regions_.end(), begin,
                             [](uint64_t b, const Region& x) { return b < x.begin; });
  regions_.insert(it, std::move(r));
  last_region_ = 0;
}

const GlobalMemory::Region* GlobalMemory::find(uint64_t addr, uint64_t bytes) const {
  if (last_region_ < regions_.size()) {
    const Region& r = regions_[last_region_];
    if (addr >= r.begin && addr + bytes <= r.end) return &r;
  }
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint64_t a, const Region& x) { return a < x.begin; });
  // Regions may overlap (a buffer given twice by address): look back over every one starting before.
  while (it != regions_.begin()) {
    --it;
    if (addr >= it->begin && addr + bytes <= it->end) {
      last_region_ = static_cast<size_t>(it - regions_.begin());
      return &*it;
    }
  }
  return nullptr;
}

GlobalMemory::GlobalMemory(const GlobalMemory& o) {
  o.drop_caches();  // first: the regions are copied without their page tables
  regions_ = o.regions_;
  pages_ = o.pages_;
}

void GlobalMemory::drop_caches() const {
  for (const Region& r : regions_) r.page_table.clear();
  last_read_page_ = last_write_page_ = UINT64_MAX;
  last_read_ = nullptr;
  last_write_ = nullptr;
}

uint8_t* GlobalMemory::own_page(uint64_t page) {
  std::shared_ptr<Page>& p = pages_[page];
  if (!p) {
    p = std::make_shared<Page>();
  } else if (p.use_count() > 1) {  // another copy of the memory reads it
    p = std::make_shared<Page>(*p);
    drop_caches();  // every cached pointer to the page it shared (overlapping regions' tables too)
  }
  p->digested = false;
  return p->bytes;
}

uint8_t* GlobalMemory::page_for_write(uint64_t addr) {
  const uint64_t page = addr / kPageBytes;
  if (page == last_write_page_) return last_write_;
  last_write_ = own_page(page);
  last_write_page_ = page;
  return last_write_;
}

const uint8_t* GlobalMemory::page_for_read(uint64_t addr) const {
  const uint64_t page = addr / kPageBytes;
  if (page == last_read_page_) return last_read_;
  auto it = pages_.find(page);
  if (it == pages_.end()) return zero_page();
  last_read_page_ = page;
  last_read_ = it->second->bytes;
  return last_read_;
}

uint64_t GlobalMemory::digest() const {
  uint64_t set = 0;  // a sum: the map's order is an accident of the path
  for (const auto& [page, p] : pages_) {
    if (!p->digested) {
      sim::StateHash h;
      uint64_t w[kPageBytes / 8];
      std::memcpy(w, p->bytes, kPageBytes);
      uint64_t any = 0;
      for (uint64_t x : w) h.add(x), any |= x;
      p->digest = any ? h.value() : 0;  // a page of zeros reads as one never written
      p->digested = true;
    }
    if (p->digest) set += sim::StateHash().add(page).add(p->digest).value();
  }
  drop_caches();  // the next write to a page goes through own_page, which clears its digest
  return set;
}

namespace {

// The page-table slot of the page holding `addr` in `r`, or null where the region is too large for a
// table (the caller then uses the hash).
uintptr_t* table_slot(const GlobalMemory::Region& r, uint64_t addr) {
  constexpr uint64_t kPage = GlobalMemory::kPageBytes;
  const uint64_t first = r.begin / kPage;
  if (r.page_table.empty()) {
    if (r.end <= r.begin) return nullptr;
    const uint64_t n = (r.end - 1) / kPage - first + 1;
    if (n > GlobalMemory::kMaxTablePages) return nullptr;
    r.page_table.assign(n, 0);
  }
  return &r.page_table[addr / kPage - first];
}

}  // namespace

uint8_t* GlobalMemory::page_for_write(const Region& r, uint64_t addr) {
  if (!r.page_table.empty()) {  // the common case, kept short
    const uintptr_t e = r.page_table[addr / kPageBytes - r.begin / kPageBytes];
    if (e & kWritable) return reinterpret_cast<uint8_t*>(e & ~kWritable);
  }
  uint8_t* page = page_for_write(addr);
  // After the page: taking a page another copy shares drops the tables.
  if (uintptr_t* slot = table_slot(r, addr)) *slot = reinterpret_cast<uintptr_t>(page) | kWritable;
  return page;
}

const uint8_t* GlobalMemory::page_for_read(const Region& r, uint64_t addr) const {
  if (!r.page_table.empty()) {
    const uintptr_t e = r.page_table[addr / kPageBytes - r.begin / kPageBytes];
    if (e) return reinterpret_cast<const uint8_t*>(e & ~kWritable);
  }
  uintptr_t* slot = table_slot(r, addr);
  if (!slot) return page_for_read(addr);
  auto it = pages_.find(addr / kPageBytes);
  if (it == pages_.end()) return zero_page();  // not cached: a later write allocates the page
  *slot = reinterpret_cast<uintptr_t>(it->second->bytes);
  return it->second->bytes;
}

void GlobalMemory::write(uint64_t addr, const void* src, uint64_t bytes) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  while (bytes) {
    const uint64_t in_page = std::min(bytes, kPageBytes - addr % kPageBytes);
    std::memcpy(page_for_write(addr) + addr % kPageBytes, s, in_page);
    addr += in_page;
    s += in_page;
    bytes -= in_page;
  }
}

void GlobalMemory::read(uint64_t addr, void* dst, uint64_t bytes) const {
  uint8_t* d = static_cast<uint8_t*>(dst);
  while (bytes) {
    const uint64_t in_page = std::min(bytes, kPageBytes - addr % kPageBytes);
    std::memcpy(d, page_for_read(addr) + addr % kPageBytes, in_page);
    addr += in_page;
    d += in_page;
    bytes -= in_page;
  }
}

// ---- GridState ---------------------------------------------------------------------------------
uint8_t* GridState::cta_shared(uint32_t cta) {
  std::shared_ptr<std::vector<uint8_t>>& s = shared[cta];
  if (!s) s = std::make_shared<std::vector<uint8_t>>(std::max<uint64_t>(smem_bytes, 1), 0);
  else if (s.use_count() > 1) s = std::make_shared<std::vector<uint8_t>>(*s);  // a copy of the grid reads it
  shared_digested[cta] = 0;
  return s->data();
}

const uint8_t* GridState::cta_shared_read(uint32_t cta) {
  std::shared_ptr<std::vector<uint8_t>>& s = shared[cta];
  if (!s) {
    s = std::make_shared<std::vector<uint8_t>>(std::max<uint64_t>(smem_bytes, 1), 0);
    shared_digested[cta] = 0;
  }
  return s->data();
}

std::array<uint32_t, 3> GridState::cta_coords(uint32_t cta) const {
  const auto& g = launch.grid;
  return {cta % g[0], (cta / g[0]) % g[1], cta / (g[0] * g[1])};
}

uint32_t GridState::rank_of(uint32_t cta) const {
  const auto c = cta_coords(cta);
  const auto& cd = launch.cluster;
  return (c[0] % cd[0]) + cd[0] * ((c[1] % cd[1]) + cd[1] * (c[2] % cd[2]));
}

uint32_t GridState::cta_of_rank(uint32_t cta, uint32_t rank) const {
  const auto& cd = launch.cluster;
  if (rank >= cd[0] * cd[1] * cd[2]) return UINT32_MAX;
  const auto c = cta_coords(cta);
  const uint32_t x = c[0] / cd[0] * cd[0] + rank % cd[0];
  const uint32_t y = c[1] / cd[1] * cd[1] + (rank / cd[0]) % cd[1];
  const uint32_t z = c[2] / cd[2] * cd[2] + rank / (cd[0] * cd[1]);
  const auto& g = launch.grid;
  if (x >= g[0] || y >= g[1] || z >= g[2]) return UINT32_MAX;
  return x + g[0] * (y + g[1] * z);
}

std::unique_ptr<GridState> make_grid(std::shared_ptr<const Program> program, const Launch& launch) {
  auto grid = std::make_unique<GridState>();
  const Program& p = *program;
  grid->program = program;
  grid->launch = launch;
  grid->launch.contents.clear();  // copied into the pages below; no second copy kept
  grid->launch.positions.clear();  // for the launch file's errors, found before a run
  for (uint32_t d = 0; d < 3; ++d) {
    if (launch.grid[d] == 0 || launch.block[d] == 0 || launch.cluster[d] == 0)
      throw PtxError(p.path, {}, "the launch's grid, block and cluster sizes must be at least 1");
  }
  grid->nctas = static_cast<uint32_t>(launch.ctas());
  grid->threads = launch.threads();
  grid->param = launch.param_bytes;
  if (grid->param.size() < p.kernel_param_bytes) grid->param.resize(p.kernel_param_bytes, 0);
  grid->constant = p.const_init;
  grid->constant.resize(p.const_bytes, 0);
  grid->smem_bytes = std::max(p.static_smem, p.dynamic_smem_base + launch.dynamic_smem);
  grid->shared.resize(grid->nctas);
  grid->shared_digest.assign(grid->nctas, 0);
  grid->shared_digested.assign(grid->nctas, 0);
  grid->shared_users.assign(grid->nctas, 0);

  grid->sym_value.resize(p.symbols.size());
  grid->sym_shared.resize(p.symbols.size());
  for (size_t i = 0; i < p.symbols.size(); ++i) {
    const SymInfo& s = p.symbols[i];
    grid->sym_shared[i] = s.kind == SymKind::Shared;
    switch (s.kind) {
      case SymKind::Shared: case SymKind::Global: case SymKind::Const: case SymKind::Frame:
        grid->sym_value[i] = s.addr;
        break;
      case SymKind::KernelParam: grid->sym_value[i] = kParamWindow + s.addr; break;
      case SymKind::Function: grid->sym_value[i] = 0; break;
    }
  }
  // The launch's parameter layout wins where it names a parameter (it is the one the bytes follow).
  for (size_t k = 0; k < p.kernel_param_names.size(); ++k)
    for (const ParamValue& v : launch.params)
      if (v.name == p.kernel_param_names[k]) grid->sym_value[p.kernel_param_symbols[k]] = kParamWindow + v.offset;

  for (const BufferDesc& b : launch.buffers) {
    if (b.bytes == 0) continue;
    if (b.address < kWindowsEnd && b.address + b.bytes > kSharedWindow)
      throw PtxError(p.path, {}, "buffer '" + b.name + "' at " + hex(b.address) +
                                     " overlaps the interpreter's address windows [" + hex(kSharedWindow) +
                                     ", " + hex(kWindowsEnd) + ")");
    grid->global.add_region(b.address, b.bytes, b.name);
    auto it = launch.contents.find(b.name);
    if (it != launch.contents.end())
      grid->global.write(b.address, it->second.data(), std::min<uint64_t>(it->second.size(), b.bytes));
  }
  for (const auto& [addr, bytes] : p.global_vars) grid->global.add_region(addr, bytes, "module .global");
  for (const auto& [addr, bytes] : p.global_init) grid->global.write(addr, bytes.data(), bytes.size());
  return grid;
}

void set_instruction_ns(GridState& grid, double ns) { grid.instruction_ns = ns; }
void set_clock_ghz(GridState& grid, double ghz) { grid.clock_ghz = ghz; }

InstructionTiming instruction_timing(const model::Timing& t) {
  const double ns = t.clock_ghz > 0 ? 1.0 / t.clock_ghz : 0;  // per cycle
  return {.alu_ns = t.ptx_alu_latency_cycles * ns,
          .convert_ns = t.ptx_convert_latency_cycles * ns,
          .int_convert_ns = t.ptx_int_convert_latency_cycles * ns,
          .mufu_ns = t.ptx_mufu_latency_cycles * ns,
          .mufu_fixup_ns = t.ptx_mufu_fixup_latency_cycles * ns,
          .divide_ns = t.ptx_divide_latency_cycles * ns,
          .shfl_ns = t.ptx_shfl_latency_cycles * ns,
          .mul64_ns = t.ptx_mul64_latency_cycles * ns,
          .mulhi64_ns = t.ptx_mulhi64_latency_cycles * ns,
          .shared_load_ns = t.ptx_shared_load_latency_cycles * ns,
          .global_load_ns = t.ptx_global_load_latency_cycles * ns,
          .store_issue_ns = t.ptx_store_issue_cycles * ns,
          .store_sector_ns = t.ptx_store_sector_cycles * ns,
          .store_partial_sector_ns = t.ptx_store_partial_sector_cycles * ns,
          .device_sector_ns = t.ptx_store_device_sectors_per_ns > 0 ? 1.0 / t.ptx_store_device_sectors_per_ns : 0,
          .device_partial_sector_ns =
              t.ptx_store_device_partial_sectors_per_ns > 0 ? 1.0 / t.ptx_store_device_partial_sectors_per_ns : 0,
          .param_miss_ns = t.ptx_param_miss_cycles * ns,
          .param_line_bytes = t.ptx_param_line_bytes,
          .param_miss_interval_ns = t.ptx_param_miss_interval_cycles * ns,
          .int_issue_ns = t.ptx_int_issue_cycles * ns,
          .convert_issue_ns = t.ptx_convert_issue_cycles * ns,
          .xu_issue_ns = t.ptx_xu_issue_cycles * ns,
          .shared_issue_ns = t.ptx_shared_issue_cycles * ns,
          .fence_ns = t.ptx_fence_cycles * ns,
          .shared_wavefront_ns = t.smem_bytes_per_ns > 0 ? 128.0 / t.smem_bytes_per_ns : 0,
          .shared_access_ns = t.ptx_shared_access_cycles * ns,
          .shared_warp_wavefront_ns = t.ptx_shared_warp_wavefront_cycles * ns};
}

void set_instruction_timing(GridState& grid, const InstructionTiming& t) {
  const auto at = [&](Latency c) -> double& { return grid.latency_ns[static_cast<size_t>(c)]; };
  at(Latency::Alu) = t.alu_ns;
  at(Latency::Convert) = t.convert_ns;
  at(Latency::IntConvert) = t.int_convert_ns;
  at(Latency::Mufu) = t.mufu_ns;
  at(Latency::MufuFixup) = t.mufu_fixup_ns;
  at(Latency::Divide) = t.divide_ns;
  at(Latency::Mul64) = t.mul64_ns;
  at(Latency::MulHi64) = t.mulhi64_ns;
  at(Latency::Shfl) = t.shfl_ns;
  at(Latency::SharedLoad) = t.shared_load_ns;
  at(Latency::GlobalLoad) = t.global_load_ns;
  grid.issue_ns = {0.0, t.int_issue_ns, t.convert_issue_ns, t.xu_issue_ns, t.shared_issue_ns};
  const auto positive = [](double v) { return v > 0; };
  grid.scoreboard = std::any_of(grid.latency_ns.begin(), grid.latency_ns.end(), positive) ||
                    std::any_of(grid.issue_ns.begin(), grid.issue_ns.end(), positive);
  grid.costs = t;
  grid.store_free_ns.assign(grid.nctas, 0.0);
  grid.shared_banks.clear();
  grid.param_miss_paths.clear();
  grid.param_lines.clear();
}
void set_sm_count(GridState& grid, uint32_t sms) { grid.sm_count = sms; }
uint64_t shared_window_base() { return kSharedWindow; }
std::unique_ptr<GridState> clone_grid(const GridState& grid) { return std::make_unique<GridState>(grid); }

void hash_grid(const GridState& grid, sim::StateHash& h) {
  h.add(grid.global.digest());
  // Each CTA's shared memory, re-digested only once written: its nonzero words with their places, up
  // to the highest byte any warp used (every byte written lies below it), so that equal contents
  // digest equal however much was used when each was taken.
  const uint64_t used = std::min(grid.smem_touched, grid.smem_bytes);
  for (size_t c = 0; c < grid.shared.size(); ++c) {
    if (!grid.shared_digested[c]) {
      static const std::vector<uint8_t> none;
      const std::vector<uint8_t>& s = grid.shared[c] ? *grid.shared[c] : none;
      sim::StateHash d;  // a block not allocated reads as zeros: the same digest
      const uint64_t n = std::min<uint64_t>(used, s.size());
      uint64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        uint64_t v;
        std::memcpy(&v, s.data() + i, 8);
        if (v) d.add(i).add(v);
      }
      for (; i < n; ++i)
        if (s[i]) d.add(i).add(s[i]);
      grid.shared_digest[c] = d.value();
      grid.shared_digested[c] = 1;
    }
    h.add(grid.shared_digest[c]);
  }
}

uint64_t shared_bytes_per_cta(const GridState& grid) { return grid.smem_bytes; }
uint64_t shared_bytes_touched(const GridState& grid) { return grid.smem_touched; }
const std::unordered_map<uint64_t, SharedConflicts>& shared_conflicts(const GridState& grid) { return grid.shared_conflicts; }
uint64_t global_bytes_stored(const GridState& grid) { return grid.global_bytes_stored; }

bool read_memory(const GridState& grid, uint32_t cta, uint64_t addr, void* out, uint64_t bytes) {
  if (addr >= kSharedWindow && addr < kSharedWindow + kWindowBytes) {
    const uint64_t a = addr - kSharedWindow;
    const int32_t rank = shared_rank(a);
    const uint32_t c = rank < 0 ? cta : grid.cta_of_rank(cta, static_cast<uint32_t>(rank));
    if (c >= grid.nctas || shared_offset(a) + bytes > grid.smem_bytes) return false;
    if (!grid.shared[c]) {
      std::memset(out, 0, bytes);
    } else {
      std::memcpy(out, grid.shared[c]->data() + shared_offset(a), bytes);
    }
    return true;
  }
  if (addr >= kParamWindow && addr < kParamWindow + kWindowBytes) {
    if (addr - kParamWindow + bytes > grid.param.size()) return false;
    std::memcpy(out, grid.param.data() + (addr - kParamWindow), bytes);
    return true;
  }
  if (addr >= kConstWindow && addr < kConstWindow + kWindowBytes) {
    if (addr - kConstWindow + bytes > grid.constant.size()) return false;
    std::memcpy(out, grid.constant.data() + (addr - kConstWindow), bytes);
    return true;
  }
  if (addr >= kLocalWindow && addr < kLocalWindow + kWindowBytes) return false;  // per thread
  if (!grid.global.find(addr, bytes)) return false;
  grid.global.read(addr, out, bytes);
  return true;
}

// ---- The warp's view ---------------------------------------------------------------------------
Where Exec::classify(uint64_t addr) const {
  if (addr < kSharedWindow || addr >= kWindowsEnd) return Where::Global;
  switch ((addr - kSharedWindow) >> 40) {
    case 0: return Where::Shared;
    case 1: return Where::Local;
    case 2: return Where::Param;
    case 3: return Where::Const;
    default: return Where::Global;  // module .global variables
  }
}

uint8_t* Exec::shared_bytes(uint64_t addr, uint32_t bytes, bool write) {
  const int32_t rank = shared_rank(addr);
  const uint32_t off = shared_offset(addr);
  uint32_t cta = place.cta;
  if (static_cast<uint32_t>(rank) != place.rank) {
    cta = grid->cta_of_rank(place.cta, static_cast<uint32_t>(rank));
    if (cta == UINT32_MAX)
      kernel_fault("bad_address", "shared::cluster address " + hex(addr) + " names cluster rank " +
                                      std::to_string(rank) + ", outside the cluster");
  }
  if (uint64_t{off} + bytes > smem_size)
    kernel_fault("bad_address", "shared access of " + std::to_string(bytes) + " bytes at offset " + hex(off) +
                                    " is outside the CTA's " + std::to_string(smem_size) + " bytes of shared memory");
  grid->smem_touched = std::max(grid->smem_touched, uint64_t{off} + bytes);
  // A read gets the block a copy of the grid may share: the caller only reads through it.
  return (write ? grid->cta_shared(cta) : const_cast<uint8_t*>(grid->cta_shared_read(cta))) + off;
}

uint8_t* Exec::access(Space space, uint64_t addr, uint32_t bytes, uint32_t lane, bool write, uint32_t align) {
  if (align == 0) align = bytes;
  // Alignments are powers of two but for odd vector sizes; a mask, not a 64-bit division, for those.
  if (align > 1 && ((align & (align - 1)) == 0 ? (addr & (align - 1)) : addr % align) != 0)
    kernel_fault("misaligned", "access of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                   " is not aligned to " + std::to_string(align) + " bytes");
  Where w;
  switch (space) {
    case Space::Shared: return shared_bytes(addr, bytes, write);
    case Space::Generic: w = classify(addr); break;
    case Space::Global:
      w = classify(addr);
      if (w != Where::Global)
        kernel_fault("bad_address", "global access at " + hex(addr) + ", an address of another state space");
      break;
    case Space::Local: w = Where::Local; break;
    case Space::Param:
      w = classify(addr);
      if (w != Where::Param && w != Where::Local)
        kernel_fault("bad_address", "param access at " + hex(addr) + ", outside the parameter space");
      break;
    case Space::Const: w = Where::Const; break;
    default: w = Where::None; break;
  }
  switch (w) {
    case Where::Shared: return shared_bytes(addr - kSharedWindow, bytes, write);
    case Where::Global: {
      const GlobalMemory::Region* region = grid->global.find(addr, bytes);
      if (!region)
        kernel_fault("bad_address", std::string(write ? "write" : "read") + " of " + std::to_string(bytes) +
                                        " bytes at " + hex(addr) + " is outside every buffer of the launch");
      const uint64_t in_page = addr % GlobalMemory::kPageBytes;
      if (in_page + bytes > GlobalMemory::kPageBytes)
        kernel_fault("misaligned", "access of " + std::to_string(bytes) + " bytes at " + hex(addr) + " crosses a page");
      if (write) return grid->global.page_for_write(*region, addr) + in_page;
      return const_cast<uint8_t*>(grid->global.page_for_read(*region, addr)) + in_page;
    }
    case Where::Local: {
      const uint64_t off = addr - kLocalWindow;
      if (addr < kLocalWindow || off + bytes > local_top)
        kernel_fault("bad_address", "local access of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                        " is outside the thread's " + std::to_string(local_top) + " local bytes");
      return local.data() + lane * local_cap + off;
    }
    case Where::Param: {
      const uint64_t off = addr - kParamWindow;
      if (addr < kParamWindow || off + bytes > grid->param.size())
        kernel_fault("bad_address", "parameter access of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                        " is outside the " + std::to_string(grid->param.size()) + " parameter bytes");
      if (write) kernel_fault("bad_address", "write to the kernel's parameter space at " + hex(addr));
      if (grid->costs.param_miss_ns > 0) charge_param_read(off, bytes);
      return grid->param.data() + off;
    }
    case Where::Const: {
      const uint64_t off = addr - kConstWindow;
      if (addr < kConstWindow || off + bytes > grid->constant.size())
        kernel_fault("bad_address", "const access of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                        " is outside the module's .const variables");
      if (write) kernel_fault("bad_address", "write to const space at " + hex(addr));
      return grid->constant.data() + off;
    }
    default: break;
  }
  kernel_fault("bad_address", "access at " + hex(addr) + " in an unsupported state space");
}

// A new miss on this SM's constant cache: how long it waits for the misses before it (a backlog of the
// miss path that drains with time; warps step out of time order by up to a step).
double Exec::param_miss_queue(double now) {
  const double interval = grid->costs.param_miss_interval_ns;
  if (interval <= 0) return 0;
  if (grid->param_miss_paths.size() <= place.sm) grid->param_miss_paths.resize(place.sm + 1);
  return grid->param_miss_paths[place.sm].take(now, interval);
}

double Exec::param_lines_ready(uint64_t first_line, uint64_t last_line, double now) {
  const double miss = grid->costs.param_miss_ns;
  if (grid->param_lines.size() <= place.sm) grid->param_lines.resize(place.sm + 1);
  std::vector<GridState::ParamLine>& lines = grid->param_lines[place.sm];
  if (lines.size() <= last_line) lines.resize(last_line + 1);
  double ready = now;
  for (uint64_t line = first_line; line <= last_line; ++line) {
    GridState::ParamLine& l = lines[line];
    // Warps step out of time order: a read earlier than the miss already noted starts the miss itself.
    if (l.ready_ns == 0 || l.asked_ns > now) {
      l.asked_ns = now;
      l.ready_ns = now + param_miss_queue(now) + miss;
    }
    ready = std::max(ready, l.ready_ns);
  }
  return ready;
}

void Exec::charge_param_read(uint64_t off, uint32_t bytes) {
  const auto line_bytes = static_cast<uint64_t>(grid->costs.param_line_bytes);
  if (line_bytes == 0) return;
  const uint64_t first_line = off / line_bytes, last_line = (off + std::max<uint32_t>(bytes, 1) - 1) / line_bytes;
  // A load's value under the scoreboard: its lines are read where it is first used (ptxas puts a
  // parameter read at its use; the SM waits for it there), noted here for exec_ld.
  if (param_read_at_use) {
    param_first_line = param_first_line == 0 ? first_line + 1 : std::min(param_first_line, first_line + 1);
    param_last_line = std::max(param_last_line, last_line + 1);
    return;
  }
  // Anything else (a copy reading its tensor map) waits here. The lanes of one instruction read the
  // same lines: the first asks, the rest find them asked.
  const double now = elapsed_now();
  const double ready = param_lines_ready(first_line, last_line, now);
  if (ready > now) stall_ns += ready - now;
}

uint64_t Exec::to_cluster_address(Space space, uint64_t addr, uint32_t bytes, uint32_t lane) {
  (void)lane;
  if (space == Space::Generic || space == Space::None) {
    if (classify(addr) != Where::Shared)
      kernel_fault("bad_address", "generic address " + hex(addr) + " is not in shared memory");
    addr -= kSharedWindow;
  } else if (space != Space::Shared) {
    kernel_fault("bad_address", "address " + hex(addr) + " is not in shared memory");
  }
  if (bytes > 1 && shared_offset(addr) % bytes != 0)
    kernel_fault("misaligned", "shared address " + hex(addr) + " is not aligned to " + std::to_string(bytes) + " bytes");
  shared_bytes(addr, bytes, false);  // range check
  return addr;
}

}  // namespace pipesim::ptx
