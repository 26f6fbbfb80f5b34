/*
 * The slot ring's protocol (StagingRing, SlotFence, FenceToken, SlotLease) as a Promela model.
 * docs/model.md says what it covers, what it abstracts away and how to run it.
 *
 * Processes (one per thread or agent of the real system):
 *   Ring       the ring's owner thread: begin() picks and hands out slots, finish() turns a lease
 *              into a FenceToken, which is submitted with the frame's copies or dropped.
 *   Recorder   a thread that holds a lease: writes the frame's bytes into the slot, then hands the
 *              lease to finish() or drops it. Two of them: two frames can record at once.
 *   Gpu        the queue: reads a submitted slot's bytes from submit until completion, in
 *              submission order; a completion is a success or a lost device.
 *   Completer  whoever fires a slot's token: the ring's owner retiring by value (retire,
 *              abandon, fail_in_flight on the token the ring keeps) or a map callback on
 *              another thread: signal() on success, fail() on a lost device, abandon() for a
 *              frame dropped unsubmitted.
 *   Echo       late, duplicate and stale firings: re-fires a token (or re-drops a lease) that
 *              has already fired, at any later moment, towards any state.
 *
 * Map from the model to the C++ (file: function; include/staging/core/ and src/core/ unless a
 * backend is named):
 *   fence[s]              slot_fence.hpp: SlotFence::word_, (generation << 3) | SlotState in one
 *                         atomic word; STATE/GEN/PACK are SlotFence::unpack_state, generation(),
 *                         pack (the C++ shifts by 8; 3 bits hold the six states here).
 *   EMPTY..FAILED         slot_ring.hpp: SlotState.
 *   transition()          slot_fence.cpp: SlotFence::transition, compare-and-swap of
 *                         (gen, from) -> (gen, to); one atomic step.
 *   fence[s] = PACK(..)   slot_fence.cpp: SlotFence::reset, the ring thread's plain store.
 *   choose()              staging_ring.hpp: StagingRing::choose (begin() only looks at the
 *                         slots' states; the owner retires before it): any slot in a state
 *                         choose() accepts, or none
 *                         (UploadError::RingFull). Capacities are abstracted away: any Ready slot
 *                         fits, growing it is a free choice, and so is the preference among
 *                         acceptable slots (TooLarge and AllocationFailed are not modelled).
 *   take()                staging_ring.hpp: StagingRing::take: one read of the word, the
 *                         allocator's create/grow/replace (replace_buffer()) for an Empty,
 *                         Abandoned or Failed slot and, by choice, a Ready one; then
 *                         reset(gen + 1, Recording) and the SlotLease (s, gen + 1) on lease_ch.
 *   Recorder              the caller's thread holding the SlotLease: slot_lease.cpp:
 *                         SlotLease::place plus the backend's writes through the mapping.
 *     drop                slot_lease.cpp: SlotLease::~SlotLease -> SlotLease::release,
 *                         transition(g, Recording, Ready).
 *     finish_ch           the lease handed to finish().
 *   Ring finish           staging_ring.hpp: StagingRing::finish: transition(g, Recording,
 *                         InFlight), asserted there (STAGING_ASSERT "a leased slot left
 *                         Recording while its lease was held"); returns the FenceToken (s, g)
 *                         (finish(lease, value) keeps it in the ring, fired by retire()).
 *     submitted           the caller submits the frame's copies (vulkan frame.cpp:
 *                         StagingFrame::finish records them; the caller submits the command
 *                         buffer): from here the GPU reads the slot.
 *     dropped             slot_fence.cpp: FenceToken::~FenceToken -> FenceToken::abandon, or
 *                         vulkan retirement.cpp: RingImpl::abandon -> StagingRing::abandon(value);
 *                         fired on any thread (fire_q).
 *   Gpu                   the queue; device loss is a completion that fails.
 *   Completer             slot_fence.cpp: FenceToken::signal / fail / abandon -> fire(), called
 *                         from staging_ring.hpp: StagingRing::retire (signal), abandon,
 *                         fail_in_flight on the token a slot finished with a value keeps
 *                         (vulkan slot_strategy.cpp: SlotStrategy::release, driven by
 *                         retirement.cpp's RingImpl::poll, device_lost and abandon), or from
 *                         webgpu: the map callback, on any thread.
 *   Echo                  a token fired again after it was spent (or a lease released again):
 *                         slot_fence.cpp: FenceToken::fire is one-shot, and the generation in
 *                         the compare-and-swap must make even a repeat that bypasses that a
 *                         no-op. One case of it is a unit test:
 *                         FenceTest.AStaleSignalCannotFlipANewerFramesSlot.
 *   gpu_reads[s]          ghost: the GPU may read slot s's bytes (set at submit, cleared at
 *                         completion). leased[s]: ghost, a recorder holds slot s's lease.
 *
 * Properties (assertions; LTL at the end):
 *   S1 a slot handed to a frame is not read by the GPU and not leased to another frame;
 *   S2 a recorder writes a slot only while the GPU does not read it;
 *   S3 a late, duplicate or stale firing never changes a slot (and so never flips a newer
 *      frame's slot);
 *   S4 a buffer is created, grown or replaced only for an Empty/Ready/Abandoned/Failed slot the
 *      GPU does not read;
 *   S5 finish() always finds its slot Recording; a token's first firing always finds its slot
 *      InFlight at its generation.
 *   L1 (reclaimedN) under weak fairness, a slot that is InFlight eventually leaves InFlight.
 *
 * Planted bugs (each a -D switch; tests/model/CMakeLists.txt expects pan to find each):
 *   BUG_STALE_GENERATION    transition() compares the state only, not the generation.
 *   BUG_REUSE_INFLIGHT      choose() treats an InFlight slot like an Abandoned one.
 *   BUG_EARLY_SIGNAL        the completion is reported when the GPU starts reading, not when
 *                           it finishes.
 *   BUG_DROP_NO_ABANDON     a token dropped unfired leaves its slot InFlight (a liveness bug).
 * GPU_PROPERTIES_ONLY leaves S3 and S5 unchecked, to show what a bug does to S1, S2 and S4 (a
 * stale generation that flips a slot ends with a slot handed out while the GPU reads it).
 */

#ifndef NSLOTS
#define NSLOTS 2
#endif
#ifndef NFRAMES
#define NFRAMES 4 /* frames begun in all: each slot's generation stays <= NFRAMES */
#endif
#ifndef NECHO
#define NECHO 2 /* firings kept for a late repeat */
#endif

#define EMPTY 0
#define READY 1
#define RECORDING 2
#define INFLIGHT 3
#define ABANDONED 4
#define FAILED 5

#define STATE(w) ((w) & 7)
#define GEN(w) ((w) >> 3)
#define PACK(g, st) (((g) << 3) | (st))

/* Each property's name is a constant true variable in its assertions, so that a violation names
 * it: S1, S2 here; S3, S4, S5 as locals of the processes that check them (an assertion on local
 * variables only stays local, which keeps partial-order reduction effective). */
hidden byte S1 = 1, S2 = 1;

byte fence[NSLOTS];     /* SlotFence::word_, all PACK(0, EMPTY) */
bool gpu_reads[NSLOTS]; /* ghost */
byte leased[NSLOTS];    /* ghost */

chan lease_ch = [NSLOTS] of { byte, byte };       /* begin() -> a recorder: (slot, gen) */
chan finish_ch = [NSLOTS] of { byte, byte };      /* a recorder -> finish(): (slot, gen) */
chan gpu_q = [NSLOTS] of { byte, byte };          /* submitted frames, in queue order */
chan fire_q = [NSLOTS] of { byte, byte, byte };   /* tokens to fire: (slot, gen, to) */
chan echo_q = [NECHO] of { byte, byte, byte };    /* spent firings: (slot, gen, from) */

/* SlotFence::transition: (g, from) -> (g, to) in one compare-and-swap. */
inline transition(s, g, from, to, ok) {
  atomic {
    if
#ifdef BUG_STALE_GENERATION
    :: STATE(fence[s]) == from -> fence[s] = PACK(GEN(fence[s]), to); ok = true
#else
    :: fence[s] == PACK(g, from) -> fence[s] = PACK(g, to); ok = true
#endif
    :: else -> ok = false
    fi
  }
}

/* Keeps a spent firing for Echo to repeat at any later moment (while Echo has room). */
inline remember(s, g, from) {
  atomic {
    if
    :: nfull(echo_q) -> echo_q ! s, g, from
    :: full(echo_q) -> skip
    fi
  }
}

/* StagingRing::choose, over-approximated (whatever the owner retired before begin()): any slot
 * whose state choose() accepts (Ready, Abandoned, Failed, Empty) may be picked, or none
 * (RingFull). The accepted states are stable against every other thread (only the ring moves a
 * slot out of them), so whichever slot the real scan picks, one slot at a time, is still
 * acceptable when take() runs, and is among these choices; which one it prefers (capacities) is
 * abstracted. */
inline choose(pick) {
  atomic {
    pick = NSLOTS;
    i = 0;
    do
    :: i < NSLOTS ->
       st = STATE(fence[i]);
       if
       :: st == READY || st == ABANDONED || st == FAILED || st == EMPTY -> pick = i
#ifdef BUG_REUSE_INFLIGHT
       :: st == INFLIGHT -> pick = i
#endif
       :: skip
       fi;
       i++
    :: else -> break
    od;
    i = 0;
    st = 0
  }
}

/* The allocator's create (Empty), growth (Ready) or replacement (Abandoned, Failed). The old
 * buffer is released here: nothing may still read it. */
inline replace_buffer(s, st) {
  assert(S4 && !gpu_reads[s]);
  assert(S4 && (st == EMPTY || st == READY || st == ABANDONED || st == FAILED))
}

/* StagingRing::take: one read of the slot's word (only this thread moves a slot out of the
 * states choose() accepts), a buffer if needed, then reset(gen + 1, Recording). */
inline take(s) {
  w = fence[s];
  st = STATE(w);
  g = GEN(w);
  if
  :: st != READY -> replace_buffer(s, st)
  :: st == READY -> if
                    :: replace_buffer(s, st) /* grown: the frame needs more */
                    :: skip                  /* fits */
                    fi
  fi;
  atomic {
    assert(S1 && !gpu_reads[s] && leased[s] == 0);
    fence[s] = PACK(g + 1, RECORDING);
    leased[s]++
  }
  lease_ch ! s, g + 1
}

proctype Ring() {
  byte begun = 0, pick, i, st, w, g, s;
  bool ok;
  bit S4 = 1, S5 = 1;
end:
  do
  :: begun < NFRAMES ->
     begun++;
     choose(pick);
     if
     :: pick != NSLOTS -> take(pick)
     :: else -> skip /* UploadError::RingFull: the frame takes its other route */
     fi;
     pick = 0; st = 0; w = 0; g = 0
  :: finish_ch ? s, g ->
     transition(s, g, RECORDING, INFLIGHT, ok);
#ifndef GPU_PROPERTIES_ONLY
     assert(S5 && ok);
#endif
     if
     :: atomic { gpu_reads[s] = true; gpu_q ! s, g } /* submitted */
     :: fire_q ! s, g, ABANDONED                      /* dropped: abandoned on any thread */
     fi;
     s = 0; g = 0; ok = false
  od
}

proctype Recorder() {
  byte s, g;
  bool ok;
  bit S5 = 1;
end:
  do
  :: lease_ch ? s, g ->
     assert(S2 && !gpu_reads[s]); /* the frame's uploads are written into the slot */
     if
     :: atomic { leased[s]--; finish_ch ! s, g }
     :: atomic {
          transition(s, g, RECORDING, READY, ok);
          leased[s]--;
#ifndef GPU_PROPERTIES_ONLY
          assert(S5 && ok); /* nothing else moves a leased slot */
#endif
          remember(s, g, RECORDING)
        }
     fi;
     atomic { s = 0; g = 0; ok = false }
  od
}

proctype Gpu() {
  byte s, g;
end:
  do
  :: gpu_q ? s, g ->
#ifdef BUG_EARLY_SIGNAL
     if
     :: fire_q ! s, g, READY
     :: fire_q ! s, g, FAILED
     fi;
     gpu_reads[s] = false;
#else
     atomic {
       gpu_reads[s] = false; /* completed: reads nothing more */
       if
       :: fire_q ! s, g, READY
       :: fire_q ! s, g, FAILED /* device lost */
       fi
     };
#endif
     atomic { s = 0; g = 0 }
  od
}

proctype Completer() {
  byte s, g, to;
  bool ok;
  bit S5 = 1;
end:
  do
  :: fire_q ? s, g, to ->
     atomic {
#ifdef BUG_DROP_NO_ABANDON
       if
       :: to == ABANDONED -> ok = true /* the dropped token does nothing */
       :: else ->
#endif
       transition(s, g, INFLIGHT, to, ok);
#ifndef GPU_PROPERTIES_ONLY
       assert(S5 && ok); /* a token's first firing finds its slot InFlight */
#endif
       remember(s, g, INFLIGHT);
#ifdef BUG_DROP_NO_ABANDON
       fi;
#endif
       s = 0; g = 0; to = 0; ok = false
     }
  od
}

proctype Echo() {
  byte s, g, from, to;
  bool ok;
  bit S3 = 1;
end:
  do
  :: echo_q ? s, g, from ->
     if
     :: to = READY
     :: from == INFLIGHT -> to = ABANDONED
     :: from == INFLIGHT -> to = FAILED
     fi;
     transition(s, g, from, to, ok);
#ifndef GPU_PROPERTIES_ONLY
     assert(S3 && !ok);
#endif
     atomic { s = 0; g = 0; from = 0; to = 0; ok = false }
  od
}

init {
  atomic {
    run Ring();
    run Recorder();
    run Recorder();
    run Gpu();
    run Completer();
    run Echo()
  }
}

/* L1: a frame in flight is eventually reclaimed (Ready, Abandoned or Failed). */
ltl reclaimed0 { [] ((STATE(fence[0]) == INFLIGHT) -> <> (STATE(fence[0]) != INFLIGHT)) }
ltl reclaimed1 { [] ((STATE(fence[1]) == INFLIGHT) -> <> (STATE(fence[1]) != INFLIGHT)) }
