/*
 * The multi-writer frame protocol: worker threads place uploads into one open frame at the same
 * time, each into a block of the frame's bytes of its own, and the owner thread finishes the
 * frame once every writer is done. docs/model.md says what it covers and how to run it.
 *
 * The protocol, and the function of include/staging/detail/core/shared_frame.hpp (SharedFrame<Payload>)
 * and writer_gate.hpp (WriterGate) that performs each step:
 *   word       one atomic word: SEALED (a bit) | the number of writers writing now (WriterGate).
 *   join       a writer is admitted only by a compare-and-swap from an unsealed word w to w + 1
 *              (a CAS loop: load; if SEALED, refused; else CAS(w, w + 1), retry on failure).
 *              A refused writer changed nothing: it never incremented the count.
 *              (SharedFrame::join, WriterGate::enter)
 *   ranges     the frame's bytes, split by open() (before any writer is admitted) into NLANES
 *              lanes, one per stripe of writer threads, and the shared range after them
 *              (SharedFrameConfig::lanes; NLANES 0: one range, the whole frame). A lane may be
 *              empty. Each range has its own atomic cursor in [start, end): bytes below it are
 *              taken. (SharedFrame::plan_lanes, range_cursor, range_end)
 *   records    the placement log: records claimed by one fetch_add on the log's counter (the
 *              code claims a batch of up to 8 with one fetch_add and uses them in turn, each as
 *              private to the writer as one record claimed alone; the model claims one per
 *              fetch_add); a record holds up to E placements (offset, size), written only by the
 *              writer that claimed it, and their count (the code publishes the count when the
 *              writer moves to its next record or leaves: before its leave, as here).
 *   block      a writer's private block [run_pos, run_end) of the frame's bytes, and its current
 *              record.
 *   place      fast path (Writer::place): the record has a free entry and the size fits before
 *              run_end: bump run_pos, write the entry, count++; no shared state touched. Then the
 *              caller writes the bytes (a step of its own: a copy recorded before it reads bytes
 *              not yet written).
 *   refill     the slow paths (Writer::refill):
 *              - new record: the record is full (or there is none) and the bytes fit: claim a new
 *                record (fetch_add), go on in the same block;
 *              - bytes (Writer::take_bytes): the ranges in turn, until one has room: the current
 *                block's range, the writer's own lane, the shared range, then the other lanes
 *                from the writer's own on (each range tried once). In a range (Writer::take_from,
 *                one CAS loop on the range's cursor):
 *                - extend: the block is in this range and nobody took bytes after it (the cursor
 *                  is at run_end): CAS(cursor: run_end -> run_pos + want) keeps the block and its
 *                  record (the bytes are contiguous); want = max(size, BLOCK), never past the
 *                  range's end;
 *                - fresh block: otherwise [cur, cur + want) from the cursor, never past the
 *                  range's end; no room in any range is DoesNotFit, and nothing changed: the
 *                  writer keeps its block (and its record; a full record was replaced by an
 *                  empty one first, as above). The old block is then released (below),
 *                  and the next placement starts a new record: a record never spans two blocks.
 *   release    (Writer::release_block) a block's unused tail [run_pos, run_end) is returned to its
 *              range by CAS(range's cursor: run_end -> run_pos) when nobody took bytes after it,
 *              else charged: added to the writer's own count of stranded bytes (no copy reads
 *              them), which leave() adds to the frame's atomic `stranded` by one fetch_add. The
 *              model adds to `stranded` at once (the total is only read once drained).
 *   leave      (Writer::leave) the block is released; then the gate's fetch_sub(1)
 *              (WriterGate::leave). The writer whose decrement leaves exactly SEALED (the last
 *              writer out after the seal) completes the frame: it sets `ready`.
 *   finish     the owner's fetch_or(SEALED) (SharedFrame::finish, WriterGate::seal). If no writer
 *              was writing, the owner completes the frame itself. Otherwise, by the caller's
 *              choice, finish waits until `ready`, or reports the writers still writing (an
 *              error) and is called again later; the frame stays sealed either way.
 *   collect    once ready (SharedFrame::collect): the records, sorted by their first offset, are
 *              read in order: one copy per placement.
 *
 * Model: NWRITERS writer processes; each joins once and, if admitted, tries NTRIES placements of
 * 1 to MAXSIZE units (no alignment: the frame's base is 0 and a unit stands for an aligned piece)
 * into a frame of CAPW units, in blocks of BLOCK units and records of E entries, then leaves.
 * With NLANES lanes, writer i's own lane is lane i % NLANES (with more writers than lanes, two
 * writers share one, as two threads of one stripe do), and each lane is 0 to LANEMAX units: every
 * layout of contiguous lanes is checked (open() lays them out from the previous frame's demand,
 * with alignment gaps between them that the model leaves out: no unit is ever in a gap). Every
 * writer takes blocks of BLOCK units (SharedFrame::WriterOptions::block_bytes != 0); writers of
 * one-upload blocks (block_bytes 0: no lane of their own, the shared range first) are not
 * modelled.
 * One Owner. A writer's private steps (the fast path, its block's bounds) are folded into the
 * atomic step before them; each shared atomic operation (CAS, fetch_add) is a step of its own.
 * The ghost `bytes` follows every unit of the frame: free, taken (in a writer's block), placed,
 * written, read by collect, or stranded (charged).
 *
 * Properties:
 *   W1 no writer is admitted after the seal, and none writes into a frame whose copies were
 *      recorded;
 *   W2 a unit is in at most one writer's block at a time, so placements never overlap (within a
 *      block or across blocks and writers: each unit is placed once); only units of the
 *      writer's own block are placed, and a tail returned or charged holds no placement;
 *   W3 every recorded copy reads fully written bytes (no copy of half-written bytes), and every
 *      upload placed is recorded (none lost);
 *   W4 the frame is completed (ready) exactly once;
 *   W5 collect reads every placement once, in ascending offset order across the sorted records
 *      (records never interleave);
 *   W6 once drained, in every range, the units below its cursor are placed or charged and none
 *      above it is, and the ranges' taken units add up to units placed + units stranded (a tail
 *      is returned or charged, never lost nor counted twice);
 *   R1 a range's cursor stays in the range: blocks are taken and extended within their range's
 *      end, and a tail is returned to the range it was taken from;
 *   L3 (recorded) under weak fairness, a finished frame's copies are eventually recorded.
 *
 * Planted bugs (-D switches):
 *   BUG_CHECK_THEN_INCREMENT   join loads the word, sees it unsealed, then increments in a
 *                              second step: a seal in between is missed.
 *   BUG_INCREMENT_THEN_CHECK   join is fetch_add(1) then a look at SEALED; a refused writer
 *                              decrements again, and if that leaves exactly SEALED it completes
 *                              the frame, as the last writer does: twice.
 *   BUG_REFUSED_NEVER_COMPLETES  as BUG_INCREMENT_THEN_CHECK, but a refused writer never
 *                              completes the frame: when its transient count hides the last
 *                              writer, nobody does (finish waits forever).
 *   BUG_FINISH_NO_WAIT         finish records the copies right after sealing, writers or not.
 *   BUG_BLOCK_TWICE            a fresh block is taken by a load of the cursor and a later plain
 *                              store, not a CAS: two writers can take the same block.
 *   BUG_LOST_TAIL              a released block drops its tail when the return CAS fails
 *                              instead of charging it.
 *   BUG_FRAME_END_FOR_RANGE    a block is taken and sized against the frame's end, not its
 *                              range's: a block taken in a lane runs into the next range.
 *   BUG_LANES_OVERLAP          open() starts the shared range one unit before the last lane's
 *                              end (an off-by-one in the layout).
 *   BUG_RELEASE_TO_OWN_LANE    a tail is returned by a CAS on the writer's own lane's cursor,
 *                              not its block's range's (the stripe taken for the range).
 *   BUG_RECORD_SPANS_BLOCKS    a fresh block keeps the current record: a record spans two
 *                              blocks, and another writer's placements fall between its entries.
 *   BUG_JOIN_ACROSS_BLOCKS     (with JOINS) an upload is joined to the writer's last placement
 *                              wherever that is, even in an earlier block and not ending where the
 *                              upload starts: the placement then covers bytes between the two.
 */

#ifndef NWRITERS
#define NWRITERS 2
#endif
#ifndef NTRIES
#define NTRIES 3 /* placements each admitted writer tries */
#endif
#ifndef CAPW
#define CAPW 6 /* units of the frame */
#endif
#ifndef MAXSIZE
#define MAXSIZE 2 /* a placement is 1 to MAXSIZE units (1 or 2) */
#endif
#ifndef BLOCK
#define BLOCK 2 /* units a writer takes from the cursor at a time (at least its size) */
#endif
#ifndef E
#define E 2 /* entries of a record */
#endif
#ifndef NLANES
#define NLANES 0 /* lanes below the shared range (0: the frame is one range) */
#endif
#ifndef LANEMAX
#define LANEMAX 2 /* the largest lane, in units */
#endif

/* Paths a run must reach (model.frame_writers.reaches_*): with -D REACH=id the checker fails
 * (assertion PATH) where path id is taken, which shows the bounds reach it. */
#define REACH_STEAL 1          /* a block from another writer's lane */
#define REACH_RETURN_SWITCH 2  /* a fresh block in another range, the old tail returned */
#define REACH_EXTEND_LANE 3    /* a block extended in a lane */
#define REACH_LANE_TO_SHARED 4 /* the own (non-empty) lane full: a block from the shared range */
#define REACH_CHARGE_LEAVE 5   /* at leave, a tail in a lane charged: someone took bytes after it */
#define REACH_CHARGE_SWITCH 6  /* the same at a fresh block */
#define REACH_JOIN 7           /* an upload joined to its record's last placement (JOINS) */
#ifdef REACH
hidden byte PATH = 1;
#define REACHED(id, cond) assert(PATH && !(REACH == id && (cond)))
#else
#define REACHED(id, cond) skip
#endif

#define SH NLANES        /* the shared range's index; lanes are 0 .. NLANES - 1 */
#define NR (NLANES + 1)  /* ranges */
#define NORANGE 255      /* a writer with no block */
#ifdef BUG_FRAME_END_FOR_RANGE
#define REND(r) CAPW
#else
#define REND(r) rend[r]
#endif

#define NREC (NWRITERS * NTRIES) /* at most one record per placement */
/* JOINS: the record an upload may join (its last placement), and whether that ends at rp. */
#ifdef BUG_JOIN_ACROSS_BLOCKS
#define JOIN_REC lastrec /* the writer's last placement's record, even in an old block */
#define JOIN_ENDS_AT(r) true
#else
#define JOIN_REC rec
#define JOIN_ENDS_AT(r) (rec_off[(r) * E + rec_n[r] - 1] + rec_size[(r) * E + rec_n[r] - 1] == rp)
#endif
#define NOREC 255
#define SEALED 8 /* above any writer count (NWRITERS < 8) */
#define COUNT(w) ((w) & 7)
#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define MAX(a, b) ((a) > (b) -> (a) : (b))

/* states of a unit of the frame's memory (ghost) */
#define FREE 0     /* above the cursor, or returned */
#define TAKEN 1    /* in a writer's block, not placed */
#define PLACED 2   /* placed, its bytes not written yet */
#define WRITTEN 3
#define READ 4     /* read by collect */
#define STRANDED 5 /* a charged tail */

hidden byte W1 = 1, W2 = 1, W3 = 1, W4 = 1, W5 = 1, W6 = 1, R1 = 1;

byte word;             /* SEALED | writers */
byte cur[NR];          /* each range's cursor, in units (the frame's base is 0) */
byte rstart[NR];       /* each range's [start, end), laid out before any writer joins */
byte rend[NR];
byte stranded;         /* units charged: in no placement, below the cursor */
byte nrec;             /* the log's counter: records claimed */
byte rec_n[NREC];      /* placements in each record */
byte rec_off[NREC * E]; /* record r's entry j: rec_off[r * E + j], rec_size[r * E + j] */
byte rec_size[NREC * E];
byte bytes[CAPW];      /* ghost: the state of each unit */
byte placed;           /* ghost: units placed */
bool ready;            /* completed: sealed and no writer writing */
bool recorded;         /* the owner recorded the frame's copies */
bool sealed_ghost;     /* ghost: finish has sealed */

/* Whoever completes the frame: the owner at the seal, or the last writer out after it. */
inline complete() {
  atomic { assert(W4 && !ready); ready = true }
}

/* Marks units [from, to) (a placement or a tail) from state `was` to `now`. */
inline mark(from, to, was, now, prop) {
  u = from;
  do
  :: u < to -> assert(prop && bytes[u] == was); bytes[u] = now; u++
  :: else -> break
  od;
  u = 0
}

/* The tail [rp, re) is charged (the writer's count, summed into `stranded` at leave). */
inline charge_tail() {
  stranded = stranded + re - rp;
  mark(rp, re, TAKEN, STRANDED, W2)
}

/* The writer's gate entry: admitted, or refused having changed nothing. */
inline join() {
#if defined(BUG_CHECK_THEN_INCREMENT)
  w = word;
  if
  :: w & SEALED -> admitted = false
  :: else -> atomic { word++; admitted = true; assert(W1 && !sealed_ghost) } /* a later increment */
  fi;
#elif defined(BUG_INCREMENT_THEN_CHECK) || defined(BUG_REFUSED_NEVER_COMPLETES)
  atomic { w = word; word++ }
  if
  :: w & SEALED ->
     admitted = false;
     atomic { word--; w = word };
#ifndef BUG_REFUSED_NEVER_COMPLETES
     if
     :: w == SEALED -> complete()
     :: else -> skip
     fi;
#endif
     skip
  :: else -> admitted = true
  fi;
#else
  atomic {
    if
    :: word & SEALED -> admitted = false /* refused */
    :: else -> word++; admitted = true; assert(W1 && !sealed_ghost) /* CAS(w, w + 1) */
    fi
  };
#endif
  w = 0
}

/* Writer::release_block: the block's tail [rp, re) returned to its range rg when nobody took
 * bytes after it (CAS on the range's cursor), else charged. */
inline release() {
  atomic {
#ifdef BUG_RELEASE_TO_OWN_LANE
    if
    :: own != NORANGE -> rg = own
    :: else -> skip
    fi;
#endif
    if
    :: cur[rg] == re ->
       assert(R1 && rp >= rstart[rg]);
       REACHED(REACH_RETURN_SWITCH, k > 0 && r != rg); /* k > 0: at a fresh block (0 at leave) */
       cur[rg] = rp;
       mark(rp, re, TAKEN, FREE, W2) /* returned */
    :: else ->
       REACHED(REACH_CHARGE_LEAVE, rg < SH && k == 0);
       REACHED(REACH_CHARGE_SWITCH, rg < SH && k > 0);
#ifndef BUG_LOST_TAIL
       charge_tail()
#else
       skip
#endif
    fi
  }
}

/* Writer::take_from(r): one CAS loop on range r's cursor. Extends the block when it is in r and
 * nobody took bytes after it, else takes a fresh block at the cursor; ok when it took bytes
 * (fr: where the block starts, stop: its new end). */
inline take_from() {
#ifdef BUG_BLOCK_TWICE
  grow = (rg == r && cur[r] == re); /* a load of the cursor, then (below) a plain store */
  fr = (grow -> rp : cur[r]);
#endif
  atomic {
#ifndef BUG_BLOCK_TWICE
    grow = (rg == r && cur[r] == re);
    fr = (grow -> rp : cur[r]);
#endif
    if
    :: fr + sz <= REND(r) ->
       stop = MIN(fr + MAX(sz, BLOCK), REND(r));
       assert(R1 && stop <= rend[r]);
       at = cur[r]; /* the units newly taken: [cursor, stop) */
       mark(at, stop, FREE, TAKEN, W2);
       at = 0;
       cur[r] = stop;
       ok = true;
       REACHED(REACH_STEAL, k >= 3);
       REACHED(REACH_EXTEND_LANE, grow && r < SH);
       REACHED(REACH_LANE_TO_SHARED, k == 2 && own < SH && rg == own && rend[own] > rstart[own])
    :: else -> skip
    fi
  }
}

/* Writer::refill, bytes (Writer::take_bytes): sz units do not fit the block. The ranges in turn:
 * k = 0 the block's range, 1 the writer's own lane, 2 the shared range, 3.. the other lanes from
 * the writer's own on; each range is tried once. ok tells whether the writer now has room for
 * sz units at rp (else DoesNotFit, nothing changed). */
inline refill_bytes() {
  k = 0;
  do
  :: !ok && k < 3 + NLANES ->
     if
     :: k == 0 -> r = rg
     :: k == 1 && own != rg -> r = own
     :: k == 2 && rg != SH -> r = SH
#if NLANES > 0
     :: k >= 3 && (own + k - 2) % NLANES != own && (own + k - 2) % NLANES != rg ->
        r = (own + k - 2) % NLANES
#endif
     :: else -> r = NORANGE
     fi;
     if
     :: r != NORANGE -> take_from()
     :: else -> skip
     fi;
     k++
  :: else -> break
  od;
  if
  :: ok && grow -> re = stop /* the same block and record */
  :: ok && !grow ->
     /* a fresh block: the old one released (its own CAS), then the new one is the writer's */
     if
     :: rg != NORANGE && rp < re -> release()
     :: else -> skip
     fi;
     atomic {
       rp = fr; re = stop; rg = r;
#ifndef BUG_RECORD_SPANS_BLOCKS
       rec = NOREC; /* a record never spans two blocks */
#endif
       skip
     }
  :: else -> skip /* DoesNotFit */
  fi;
  atomic { k = 0; r = 0; fr = 0; stop = 0; grow = false }
}

/* Writer::place: sz units at rp into the current record (a new one when it is full or there is
 * none: Writer::refill's fetch_add on the log's counter), then the caller writes the bytes. With
 * JOINS (a payload with joins(), Writer::commit), the upload may instead be added to the record's
 * last placement: when the record has a free entry and that placement ends at rp, and the payload
 * says it continues it (either choice). */
inline place() {
  atomic {
#ifdef JOINS
    jr = JOIN_REC;
    if
    :: jr != NOREC && rec_n[jr] > 0 && rec_n[jr] < E && JOIN_ENDS_AT(jr) -> joined = true
    :: true -> skip
    fi;
#endif
    if
    :: !joined && (rec == NOREC || rec_n[rec] == E) -> rec = nrec; nrec++; assert(rec < NREC)
    :: else -> skip /* the fast path: private */
    fi;
    at = rp;
    rp = rp + sz;
    mark(at, rp, TAKEN, PLACED, W2);
    if
    :: joined -> rec_size[jr * E + rec_n[jr] - 1] = rec_size[jr * E + rec_n[jr] - 1] + sz
    :: else ->
       rec_off[rec * E + rec_n[rec]] = at;
       rec_size[rec * E + rec_n[rec]] = sz;
       rec_n[rec]++
#ifdef JOINS
       ; lastrec = rec
#endif
    fi;
    REACHED(REACH_JOIN, joined);
    joined = false;
    jr = NOREC;
    placed = placed + sz;
    ok = false
  };
  d_step { /* the bytes written */
    assert(W1 && !recorded);
    mark(at, at + sz, PLACED, WRITTEN, W2);
    at = 0; sz = 0
  }
}

/* Writer::leave: the block released, then the gate's fetch_sub(1). */
inline leave() {
  if
  :: rg != NORANGE && rp < re -> release()
  :: else -> skip
  fi;
  atomic { word--; w = word; rp = 0; re = 0; rg = NORANGE; rec = NOREC; ok = false };
  if
  :: w == SEALED -> complete() /* the last writer out after the seal */
  :: else -> skip
  fi
}

proctype Writer(byte id) {
  byte tries, w, u, sz, at;
  byte rp, re;         /* the block [run_pos, run_end) */
  byte rg = NORANGE;   /* the block's range; NORANGE: no block yet */
  byte rec = NOREC;    /* the current record */
  byte lastrec = NOREC; /* the record of the writer's last placement (JOINS) */
  byte jr = NOREC;      /* the record joined to (JOINS) */
  bool joined;
  byte k, r, fr, stop;
  bool admitted, ok, grow;
#if NLANES > 0
  byte own = id % NLANES; /* the writer's own lane (its thread's stripe) */
#else
  byte own = NORANGE;
#endif
  join();
  if
  :: admitted ->
     do
     :: tries < NTRIES ->
        atomic {
          tries++;
          if
          :: sz = 1
#if MAXSIZE >= 2
          :: sz = 2
#endif
          fi;
          ok = rp + sz <= re
        };
        if
        :: !ok -> refill_bytes()
        :: else -> skip
        fi;
        if
        :: ok -> place()
        :: else -> sz = 0 /* DoesNotFit */
        fi
     :: else -> break
     od;
     leave()
  :: else -> skip
  fi
}

/* collect: the records sorted by first offset, read in order, one copy per placement; then the
 * frame's accounting. */
inline record() {
  d_step {
    recorded = true;
    last = 0;
    n = 0;
    do
    :: true ->
       /* the unread record with the lowest first offset */
       best = NOREC;
       r = 0;
       do
       :: r < nrec ->
          if
          :: rec_n[r] > 0 && (best == NOREC || rec_off[r * E] < rec_off[best * E]) -> best = r
          :: else -> skip
          fi;
          r++
       :: else -> break
       od;
       if
       :: best == NOREC -> break
       :: else -> skip
       fi;
       j = 0;
       do
       :: j < rec_n[best] ->
          at = rec_off[best * E + j];
          assert(W5 && at >= last); /* ascending, none overlapping */
          last = at + rec_size[best * E + j];
          u = at;
          do
          :: u < last -> assert(W3 && bytes[u] == WRITTEN); bytes[u] = READ; n++; u++
          :: else -> break
          od;
          j++
       :: else -> break
       od;
       rec_n[best] = 0 /* read */
    od;
    assert(W3 && n == placed); /* every placement recorded */
    n = 0; /* now: the units the ranges' cursors have taken */
    r = 0;
    do
    :: r < NR ->
       assert(R1 && rstart[r] <= cur[r] && cur[r] <= rend[r]);
       u = rstart[r];
       do
       :: u < cur[r] ->
          assert(W3 && bytes[u] != PLACED && bytes[u] != WRITTEN);
          assert(W6 && (bytes[u] == READ || bytes[u] == STRANDED));
          u++
       :: u >= cur[r] && u < rend[r] -> assert(W6 && bytes[u] == FREE); u++
       :: else -> break
       od;
       n = n + cur[r] - rstart[r];
       r++
    :: else -> break
    od;
    assert(W6 && n == placed + stranded);
    last = 0; n = 0; best = 0; r = 0; j = 0; at = 0; u = 0
  }
}

proctype Owner() {
  byte w, last, n, best, r, j, at, u;
  /* finish: fetch_or(SEALED) */
  atomic { w = word; word = word | SEALED; sealed_ghost = true };
  if
  :: COUNT(w) == 0 -> complete()
  :: else -> skip
  fi;
#ifdef BUG_FINISH_NO_WAIT
  record()
#else
  if
  :: ready -> record()      /* no writer was writing */
  :: !ready -> ready; record() /* waits (or: reports WritersActive, is called again later) */
  fi
#endif
}

/* SharedFrame::open: the lanes laid out from the base (each of 0 to LANEMAX units: every layout
 * open() may choose from the previous frame), the shared range after them; then the writers
 * and the owner start. */
init {
  byte n, at, ln;
  atomic {
    do
    :: n < NLANES ->
       ln = 0;
       do
       :: ln < LANEMAX && at + ln < CAPW -> ln++
       :: break
       od;
       rstart[n] = at; rend[n] = at + ln; cur[n] = at;
       at = at + ln;
       n++
    :: else -> break
    od;
#ifdef BUG_LANES_OVERLAP
    if
    :: at > 0 -> at--
    :: else -> skip
    fi;
#endif
    rstart[SH] = at; rend[SH] = CAPW; cur[SH] = at;
    n = 0; at = 0; ln = 0;
    do
    :: n < NWRITERS -> run Writer(n); n++
    :: else -> break
    od;
    run Owner()
  }
}

/* L3: the finished frame's copies are eventually recorded. */
ltl recorded_eventually { <> recorded }
