/*
 * The byte ring's retirement (ByteRing: FIFO reservations with timeline tokens, cancel, retire)
 * racing a GPU that completes a monotonic timeline, as a Promela model. docs/model.md says what
 * it covers, what it abstracts away and how to run it.
 *
 * Processes:
 *   RingThread  the one thread that owns the ring (ByteRing is not synchronised): reserves,
 *               cancels, submits batches of copies and retires with completed values it has
 *               read, which may be late (read a while ago) and so arrive out of order.
 *   Gpu         the queue: completes the submitted timeline values in order; until value v
 *               completes it may read every reservation whose copy was submitted with v.
 *
 * Region 0 only, CAP units of bytes; a reservation is 1 or 2 units at alignment 1, so it can
 * wrap, skipping the tail, exactly as fit_ring() places it.
 *
 * Map from the model to the C++ (file: function; src/core/byte_ring.cpp unless named otherwise):
 *   head, tail, used       byte_ring.cpp: Region::head/tail/used of region 0.
 *   front, back            byte_ring.cpp: EntryQueue (Impl::fifo); back is Impl::next_id. The
 *                          live ids are exactly [front, back): entries leave only at the front
 *                          and the back, so they stay contiguous.
 *   e_*[id]                byte_ring.cpp: Entry (token, start, end normalised, charge,
 *                          cancelled); e_off and e_size are the Reservation's offset and size,
 *                          e_batch the value whose submission carries its copy.
 *   fit_ring()             byte_ring.cpp: fit_ring, at the head or wrapped to 0 with
 *                          [head, CAP) skipped and charged.
 *   commit()               byte_ring.cpp: Impl::commit: head = end, used += charge, push_back.
 *   reclaim_front/back()   byte_ring.cpp: Impl::reclaim + release_charge: tail = end (front) or
 *                          head = start (back); an emptied region resets head = tail = 0.
 *   retire(v)              byte_ring.cpp: Impl::retire (ByteRing::retire, ByteRing::poll):
 *                          completed = max(completed, v), then reclaim from the front while the
 *                          front is cancelled or its token <= completed.
 *   cancel(id)             byte_ring.cpp: Impl::cancel: mark, pop cancelled entries at the back
 *                          (the head rolls back), then at the front.
 *   reserve                byte_ring.cpp: ByteRing::reserve + Impl::reserve_slow under Defer:
 *                          fit, else one poll (retire(completion->completed())) and a second
 *                          fit, else WouldBlock.
 *   open, submitted        the caller's timeline: `open` is the value the batch being recorded
 *                          will signal (a Vulkan frame's timeline value); submitting hands the
 *                          batch to the queue. A reservation's token is `open` or later (tokens
 *                          need not increase from one request to the next).
 *   gpu_done               timeline.hpp: CompletionSource::completed (vulkan ring.cpp:
 *                          RingImpl::poll reads vkGetSemaphoreCounterValue); never decreases.
 *   owner[u]               ghost: the live reservation whose payload is in unit u (0: none).
 *   last_batch[u]          ghost: the timeline value whose copies last read unit u (0: none, or
 *                          the reservation was cancelled: its copy was never submitted).
 *   gst[id]                ghost: NONE, LIVE or RECLAIMED (invariant_checker.hpp keeps the same
 *                          record at run time).
 *
 * Properties:
 *   B1 a unit handed to a reservation is not read by the GPU (no copy of a reservation whose
 *      value has not completed covers it);
 *   B2 a unit handed to a reservation holds no live reservation's payload (never both freed
 *      and live), and the ring's used count equals the charges of the live entries;
 *   B3 a reservation is reclaimed at most once, and only when cancelled or its token <=
 *      completed <= the GPU's value;
 *   B4 at the end (everything submitted, the GPU idle, the ring polled) nothing is lost: every
 *      reservation was reclaimed, the region is empty;
 *   L2 (reclaimed) under weak fairness, a reservation whose copy was submitted is eventually
 *      reclaimed (for every id: `watch` is any of them). Without fairness it fails: the ring
 *      can poll for ever while the GPU never runs.
 *
 * Planted bugs (-D switches):
 *   BUG_RETIRE_EARLY          retire() also reclaims a front entry whose token is one past the
 *                             completed value.
 *   BUG_RETIRE_BY_COUNT       retire() counts reservations against the completed value
 *                             (reclaims reservation n once n values completed) instead of
 *                             comparing tokens: reclamation by frame index, not by the signal.
 *   BUG_CANCEL_RECLAIMS_AT_ONCE  cancel() reclaims a cancelled entry in the middle of the FIFO at
 *                             once, rolling the head back over newer live reservations.
 *   BUG_FULL_IS_EMPTY         fit_ring() takes head == tail for an empty region (without
 *                             looking at `used`), so a full region looks empty.
 */

#ifndef CAP
#define CAP 3 /* units of region 0 */
#endif
#ifndef NRES
#define NRES 4 /* reservations requested in all */
#endif
#ifndef MAXV
#define MAXV 3 /* timeline values submitted in all */
#endif
#ifndef NRETIRE
#define NRETIRE 3 /* retire() calls before the drain, each with a value read at any earlier time */
#endif
#ifndef NCANCEL
#define NCANCEL 1 /* cancel() calls */
#endif

#define NONE 0
#define LIVE 1
#define RECLAIMED 2

hidden byte B1 = 1, B2 = 1, B3 = 1, B4 = 1; /* names printed with a violated assertion */

byte head, tail, used;
byte front = 1, back = 1;
byte e_tok[NRES + 1], e_start[NRES + 1], e_end[NRES + 1], e_charge[NRES + 1];
byte e_off[NRES + 1], e_size[NRES + 1], e_batch[NRES + 1];
bool e_canc[NRES + 1];
byte completed;

byte open = 1, submitted, gpu_done;

byte owner[CAP], last_batch[CAP];
byte gst[NRES + 1];
byte watch; /* the reservation L2 follows: init picks any id, so one run covers every id (only
                for an LTL run: spin-check defines LIVENESS; the safety runs need no watch) */

/* The GPU may still read a unit whose last copy was submitted with value b: b has been
 * submitted and has not completed. */
#define GPU_READS(b) ((b) != 0 && (b) <= submitted && gpu_done < (b))

/* fit_ring(): where `size` units fit region 0, if anywhere (never straddling the end). */
inline fit_ring(size) {
  d_step {
  fit = false;
  if
#ifdef BUG_FULL_IS_EMPTY
  :: head == tail -> fit = true; off = 0; start = 0; charge = size
  :: head != tail ->
#else
  :: used == 0 -> fit = true; off = 0; start = 0; charge = size
  :: used == CAP -> skip
  :: used != 0 && used != CAP ->
#endif
     limit = (head > tail -> CAP : tail);
     if
     :: head + size <= limit -> fit = true; off = head; start = head; charge = size
     :: head + size > limit && head > tail && size <= tail ->
        fit = true; off = 0; start = head;
        charge = CAP - head + size
     :: else -> skip
     fi
  fi
  }
}

/* Impl::commit(), with the ghosts' checks of every unit handed out. */
inline commit(size, tok) {
  d_step {
    id = back;
    u = off;
    do
    :: u < off + size ->
       assert(B1 && !GPU_READS(last_batch[u]));
       assert(B2 && owner[u] == 0);
       owner[u] = id;
       last_batch[u] = open;
       u++
    :: else -> break
    od;
    e_tok[id] = tok;
    e_batch[id] = open;
    e_start[id] = start;
    e_off[id] = off;
    e_size[id] = size;
    e_end[id] = (off + size == CAP -> 0 : off + size);
    e_charge[id] = charge;
    head = e_end[id];
    used = used + charge;
    gst[id] = LIVE;
    back++;
    u = 0
  }
}

/* The ghost side of a reclamation: the payload's units are free again. */
inline free_units(id) {
  assert(B3 && gst[id] == LIVE);
  assert(B3 && (e_canc[id] || (e_tok[id] <= completed && completed <= gpu_done)));
  gst[id] = RECLAIMED;
  u = e_off[id];
  do
  :: u < e_off[id] + e_size[id] ->
     assert(B2 && owner[u] == id);
     owner[u] = 0;
     if
     :: e_canc[id] -> last_batch[u] = 0 /* its copy was never submitted */
     :: else -> skip
     fi;
     u++
  :: else -> break
  od;
  u = 0
}

/* Forgets a reclaimed entry (keeps the state vector small). */
inline forget(id) {
  e_tok[id] = 0; e_start[id] = 0; e_end[id] = 0; e_charge[id] = 0;
  e_off[id] = 0; e_size[id] = 0; e_batch[id] = 0; e_canc[id] = false
}

/* Impl::reclaim(true) + release_charge(from_front). */
inline reclaim_front() {
  free_units(front);
  used = used - e_charge[front];
  tail = e_end[front];
  if
  :: used == 0 -> head = 0; tail = 0
  :: else -> skip
  fi;
  forget(front);
  front++
}

/* Impl::reclaim(false) + release_charge(from back). */
inline reclaim_back() {
  free_units(back - 1);
  used = used - e_charge[back - 1];
  head = e_start[back - 1];
  if
  :: used == 0 -> head = 0; tail = 0
  :: else -> skip
  fi;
  forget(back - 1);
  back--
}

/* Impl::retire(v). */
inline retire(v) {
  d_step {
    if
    :: v > completed -> completed = v
    :: else -> skip
    fi;
    do
#ifdef BUG_RETIRE_BY_COUNT
    :: front < back && (e_canc[front] || front <= completed) -> reclaim_front()
#else
    :: front < back && (e_canc[front] || e_tok[front] <= completed) -> reclaim_front()
#endif
#ifdef BUG_RETIRE_EARLY
    :: front < back && !e_canc[front] && e_tok[front] == completed + 1 -> reclaim_front()
#endif
    :: else -> break
    od
  }
}

/* Impl::cancel(id). */
inline cancel(id) {
  d_step {
    e_canc[id] = true;
#ifdef BUG_CANCEL_RECLAIMS_AT_ONCE
    if
    :: id != front && id != back - 1 ->
       free_units(id);
       used = used - e_charge[id];
       head = e_start[id]
    :: else -> skip
    fi;
#endif
    do
    :: front < back && e_canc[back - 1] && gst[back - 1] == LIVE -> reclaim_back()
    :: else -> break
    od;
    do
    :: front < back && e_canc[front] && gst[front] == LIVE -> reclaim_front()
    :: else -> break
    od
  }
}

/* B2's bookkeeping half: used is the sum of the live entries' charges. */
inline check_used() {
  d_step {
    sum = 0;
    u = front;
    do
    :: u < back -> sum = sum + (gst[u] == LIVE -> e_charge[u] : 0); u++
    :: else -> break
    od;
    assert(B2 && used == sum);
    u = 0;
    sum = 0
  }
}

/* Each of the ring's calls is one atomic step: the ring's state is its thread's alone, and the
 * only shared value it reads, the GPU's completed value, is read once per call. */
proctype RingThread() {
  byte nreq, nretire, ncancel, size, tok, v, id, u, off, start, charge, limit, sum;
  bool fit;
  do
  :: atomic { /* reserve() */
       nreq < NRES && open <= MAXV ->
       nreq++;
       if
       :: size = 1
       :: size = 2
       fi;
       if
       :: tok = open
       :: open < MAXV -> tok = open + 1
       fi;
       fit_ring(size);
       if
       :: !fit -> v = gpu_done; retire(v); fit_ring(size) /* the one poll on a miss */
       :: else -> skip
       fi;
       if
       :: fit -> commit(size, tok)
       :: else -> skip /* WouldBlock */
       fi;
       check_used();
       size = 0; tok = 0; v = 0; off = 0; start = 0; charge = 0; limit = 0; fit = false
     }
  :: atomic { /* cancel() a reservation whose copy was not submitted */
       ncancel < NCANCEL && front < back ->
       ncancel++;
       id = front;
       do
       :: id < back - 1 -> id++
       :: break
       od;
       if
       :: e_batch[id] == open && !e_canc[id] -> cancel(id)
       :: else -> skip
       fi;
       id = 0;
       check_used()
     }
  :: atomic { /* submit the batch: the GPU may read its copies until `open` completes */
       open <= MAXV -> submitted = open; open++
     }
  :: atomic { /* retire() with a value read at some earlier time: late, out of order */
       nretire < NRETIRE ->
       nretire++;
       v = 0;
       do
       :: v < gpu_done -> v++
       :: break
       od;
       retire(v);
       check_used();
       v = 0
     }
  :: break
  od;
  /* Drain: submit everything still open, then poll until every reservation is reclaimed (a
   * busy loop: only weak fairness lets the GPU run meanwhile). */
  atomic {
    do
    :: open <= MAXV -> submitted = open; open++
    :: else -> break
    od
  };
  do
  :: front == back -> break
  :: atomic { front < back -> v = gpu_done; retire(v); v = 0 } /* poll(), again and again */
  od;
  atomic {
    assert(B4 && used == 0 && head == 0 && tail == 0);
    u = 1;
    do
    :: u < back -> assert(B4 && gst[u] == RECLAIMED); u++
    :: else -> break
    od;
    u = 0;
    do
    :: u < CAP -> assert(B4 && owner[u] == 0); u++
    :: else -> break
    od
  }
}

proctype Gpu() {
end:
  do
  :: gpu_done < submitted -> gpu_done++
  od
}

init {
  atomic {
#ifdef LIVENESS
    watch = 1;
    do
    :: watch < NRES -> watch++
    :: break
    od;
#endif
    run RingThread();
    run Gpu()
  }
}

/* L2: a reservation whose copy was submitted is eventually reclaimed (`watch`: any id). */
#define SUBMITTED(id) (gst[id] == LIVE && !e_canc[id] && e_batch[id] <= submitted)
ltl reclaimed { [] (SUBMITTED(watch) -> <> (gst[watch] == RECLAIMED)) }
