/* Race (c) of scenarios/races/c_elected_release_broken.scn, in Promela for SPIN (ours, issue 20).
 * One stage: the producer waits on `empty`, issues a copy whose bytes complete `full` when they land
 * (the tma process); a warpgroup of four consumer warps waits on `full`, and only the elected warp
 * arrives on `empty` (count 1) — without a warpgroup sync unless FIXED, which adds the named barrier.
 * A wait is a guard on the barrier's parity: SPIN may run it at any moment the guard holds, so a warp
 * can miss a phase that completed twice since it last looked (docs/semantics.md, "Polling and missed
 * phases"). A hang is an invalid end state.
 *   spin -a -DK_TILES=8 elected_release.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 */
#ifndef K_TILES
#define K_TILES 8
#endif
#ifndef FIXED
#define FIXED 0
#endif
#define WARPS 4

byte full_done = 0;   /* phases full has completed */
byte empty_done = 0;  /* phases empty has completed */
byte in_flight = 0;   /* copies issued whose bytes have not landed */
byte named_arrived = 0, named_phase = 0;

active proctype producer() {
  short k = 0;
  do
  :: k < K_TILES ->
     ((k + 1) % 2 != empty_done % 2);        /* wait empty parity (k + 1) % 2 */
     in_flight++;                            /* arrive_expect_tx + tma: the bytes land later */
     k++
  :: else -> break
  od
}

active proctype tma() {
end:
  do
  :: atomic { in_flight > 0 -> in_flight--; full_done++ }  /* the bytes land: full completes */
  od
}

active [WARPS] proctype consumer() {
  short k = 0; byte gen;
  do
  :: k < K_TILES ->
     (k % 2 != full_done % 2);               /* wait full parity k % 2 */
#if FIXED
     atomic {                                /* bar_sync 1 threads = 128 */
       gen = named_phase;
       named_arrived++;
       if
       :: named_arrived == WARPS -> named_arrived = 0; named_phase++
       :: else -> skip
       fi
     }
     (named_phase != gen);
#endif
     if
     :: _pid == 2 -> empty_done++            /* the elected warp (warp_in_role 0) releases the stage */
     :: else -> skip
     fi;
     k++
  :: else -> break
  od
}
