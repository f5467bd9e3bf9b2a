/* The Hopper warp-specialized pipeline of scenarios/hopper/ws_gemm.scn at one CTA (ours, issue 20):
 * PipelineTmaAsync with STAGES stages, one producer warp, two consumer warpgroups (one arrival each
 * on empty, count 2), TILES x K_TILES k-blocks. Waits are guards on the parity, as in
 * elected_release.pml; the copies land in any order (one tma process per stage). With
 * BUG_PRODUCER_PHASE0 the producer starts at phase 0 (bug-catalog 1): it hangs at once.
 *   spin -a -DTILES=2 -DK_TILES=4 ws_pipeline.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 */
#ifndef STAGES
#define STAGES 4
#endif
#ifndef TILES
#define TILES 2
#endif
#ifndef K_TILES
#define K_TILES 4
#endif
#ifndef BUG_PRODUCER_PHASE0
#define BUG_PRODUCER_PHASE0 0
#endif
#define CONSUMERS 2
#define N (TILES * K_TILES)

byte full_done[STAGES], empty_done[STAGES], empty_arrived[STAGES], in_flight[STAGES];

active proctype producer() {
  short i = 0; byte s;
  do
  :: i < N ->
     s = i % STAGES;
     /* producer_acquire: wait empty[s] at the producer phase (CUTLASS starts it at 1) */
     (((i / STAGES) + 1 - BUG_PRODUCER_PHASE0) % 2 != empty_done[s] % 2);
     in_flight[s]++;                       /* arrive_expect_tx + tma: the bytes land later */
     i++
  :: else -> break
  od
}

active [STAGES] proctype tma() {
  byte s = _pid - 1;
end:
  do
  :: atomic { in_flight[s] > 0 -> in_flight[s]--; full_done[s]++ }
  od
}

active [CONSUMERS] proctype consumer() {
  short i = 0; byte s;
  do
  :: i < N ->
     s = i % STAGES;
     ((i / STAGES) % 2 != full_done[s] % 2);   /* consumer_wait */
     atomic {                                   /* consumer_release: one arrival per warpgroup */
       empty_arrived[s]++;
       if
       :: empty_arrived[s] == CONSUMERS -> empty_arrived[s] = 0; empty_done[s]++
       :: else -> skip
       fi
     }
     i++
  :: else -> break
  od
}
