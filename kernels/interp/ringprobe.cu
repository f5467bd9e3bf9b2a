// Where a ring of TMA stages spends its time on the H100: gemmloads.cu's mainloop (bulk copies) with
// lane 0's clock stamped around each step, for 2048x2048x1024 (16 x 16 tiles, 16 k-blocks; a few
// rows 256 k-blocks, K = 16384, where each tile's A boxes come cold from the DRAM). Per
// configuration: the launch's time (CUDA events, back to back), and over every CTA's items 8..63 the
// medians of the wait (try_wait until the stage has landed, then __syncwarp), the expect_tx arrive
// (with, where asked, the handoff through an `empty` barrier before it), the first copy's issue, the
// other copies' issue and the period from one wait's start to the next.
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/ringprobe.cu -o ringprobe && ./ringprobe
#include "kernels/interp/gemmloads.cu"
#include "kernels/interp/probe.cuh"

extern "C" __global__ void __launch_bounds__(32) gemm_loads_bulk_stamped(const uint8_t* a_tiles, const uint8_t* b_tiles,
                                                                         int m_tiles, int n_tiles, int k_blocks,
                                                                         uint32_t piece, int stages, uint32_t batch,
                                                                         uint64_t* stamps, bool handoff, uint32_t order,
                                                                         bool divide_each_item) {
  mainloop<false>(nullptr, nullptr, a_tiles, b_tiles, m_tiles, n_tiles, k_blocks, piece, 0, stages, batch, stamps, handoff,
                  order, divide_each_item);
}

namespace {

struct Config {
  int ctas, stages;
  bool batch;
  uint32_t piece;
  bool handoff;
  uint32_t order = 0;   // gemmloads.cu's issue order
  bool stamped = true;  // false: the launch's time only, no stamps
  bool divide = false;  // every item divides its stage, k-block and tile out of its index (the first form)
  int k_blocks = 16;    // 256: A's 64 MiB cycle through the L2 (each tile's A box read cold), B's stay hot
};

}  // namespace

int main() {
  const int m_tiles = 16, n_tiles = 16, max_k_blocks = 256;
  const size_t bytes = size_t(m_tiles) * max_k_blocks * kBoxBytes;
  uint8_t *a = nullptr, *b = nullptr;
  uint64_t* stamps = nullptr;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  CK(cudaMemset(b, 2, bytes));
  CK(cudaMalloc(&stamps, sizeof(uint64_t) * 132 * kStampsPerCta));
  CK(cudaFuncSetAttribute(gemm_loads_bulk_stamped, cudaFuncAttributeMaxDynamicSharedMemorySize, kStages * 2 * kBoxBytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::printf("== ringprobe: gemmloads bulk, 2048x2048xK (K = 64 x k-blocks: 1024 unless shown); ns (SM clock from each CTA's own clock / global timer)\n");
  std::printf("%5s %6s %5s %6s %7s %5s %6s %4s %10s %8s %8s %8s %8s %8s %6s\n", "CTAs", "stages", "batch", "piece", "handoff", "order", "divide", "kblk",
              "launch us", "wait", "expect", "copy 1", "copies", "period", "GHz");
  std::printf("   order 0: arrive.expect_tx, copies; 1: copies, arrive.expect_tx; 2: expect_tx.relaxed, copies, arrive;\n"
              "   3: arrive.expect_tx + copy per box, B on a barrier of its own; 4: expect_tx.relaxed + copy per box, arrive\n");
  // Incremental indexing (gemmloads.cu's default, as CUTLASS's producer), then the first form's rows
  // (every item divides its indices out: runs/ringprobe-h100-2026-11-27.txt) for comparison.
  const Config configs[] = {{1, 6, false, kBoxBytes, false},  {1, 1, false, kBoxBytes, false},  {16, 6, false, kBoxBytes, false},
                            {132, 6, false, kBoxBytes, false}, {16, 6, false, 4096, false},      {1, 6, false, kBoxBytes, true},
                            {1, 6, false, kBoxBytes, false, 1}, {1, 6, false, kBoxBytes, false, 2},
                            {1, 6, false, kBoxBytes, false, 3}, {1, 6, false, kBoxBytes, false, 4},
                            {1, 6, false, 8192, false},         {16, 6, false, kBoxBytes, false, 3},
                            {1, 6, false, kBoxBytes, false, 0, false},
                            {1, 6, false, kBoxBytes, false, 0, true, false, 256}, {1, 1, false, kBoxBytes, false, 0, true, false, 256},
                            {1, 6, false, 4096, false, 0, true, false, 256},
                            {1, 6, false, kBoxBytes, false, 0, true, true}, {132, 6, false, kBoxBytes, false, 0, true, true},
                            {1, 6, false, kBoxBytes, false, 0, false, true}};
  for (const Config& c : configs) {
    const size_t smem = size_t(c.stages) * 2 * kBoxBytes;
    std::vector<double> launch_us;
    CK(cudaMemset(stamps, 0, sizeof(uint64_t) * 132 * kStampsPerCta));
    for (int rep = 0; rep < 6; ++rep) {
      CK(cudaEventRecord(e0));
      gemm_loads_bulk_stamped<<<c.ctas, 32, smem>>>(a, b, m_tiles, n_tiles, c.k_blocks, c.piece, c.stages, c.batch ? 1u : 0u,
                                                    c.stamped ? stamps : nullptr, c.handoff, c.order, c.divide);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (rep > 0) launch_us.push_back(ms * 1e3);
    }
    std::vector<uint64_t> h(size_t(c.ctas) * kStampsPerCta);
    CK(cudaMemcpy(h.data(), stamps, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    std::vector<double> wait, expect, copy1, copies, period, ghz;
    for (int cta = 0; cta < c.ctas; ++cta) {
      const uint64_t* s = h.data() + size_t(cta) * kStampsPerCta;
      const double g = double(s[3] - s[1]) / double(s[2] - s[0]);
      ghz.push_back(g);
      const int items = std::min(kStampItems, ((m_tiles * n_tiles - cta + c.ctas - 1) / c.ctas) * c.k_blocks);
      for (int i = 8; i + 1 < items; ++i) {
        const uint64_t* t = s + kStampHead + kStampsPerItem * i;
        const uint64_t* next = t + kStampsPerItem;
        if (t[2] == 0) continue;  // no issue at this item (a batch's inner items, the ring's tail)
        wait.push_back(double(t[1] - t[0]) / g);
        expect.push_back(double(t[2] - t[1]) / g);
        copy1.push_back(double(t[3] - t[2]) / g);
        copies.push_back(double(t[4] - t[3]) / g);
        period.push_back(double(next[0] - t[0]) / g);
      }
    }
    std::printf("%5d %6d %5d %6u %7d %5u %6d %4d %10.2f %8.1f %8.1f %8.1f %8.1f %8.1f %6.3f\n", c.ctas, c.stages, int(c.batch),
                c.piece, int(c.handoff), c.order, int(c.divide), c.k_blocks, median(launch_us), median(wait), median(expect), median(copy1), median(copies), median(period),
                median(ghz));
  }
  return 0;
}
