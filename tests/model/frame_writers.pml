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
 *   cursor     the frame's atomic byte cursor in [base, end): bytes below it are taken.
 *   records    the placement log: records claimed one at a time by one fetch_add on the log's
 *              counter; a record holds up to E placements (offset, size), written only by the
 *              writer that claimed it, and their count.
 *   block      a writer's private block [run_pos, run_end) of the frame's bytes, and its current
 *              record.
 *   place      fast path (Writer::place): the record has a free entry and the size fits before
 *              run_end: bump run_pos, write the entry, count++; no shared state touched. Then the
 *              caller writes the bytes (a step of its own: a copy recorded before it reads bytes
 *              not yet written).
 *   refill     the slow paths (Writer::refill):
 *              - new record: the record is full (or there is none) and the bytes fit: claim a new
 *                record (fetch_add), go on in the same block;
 *              - extend: the bytes do not fit and nobody took bytes after the block:
 *                CAS(cursor: run_end -> run_end + want) keeps the block and its record (the
 *                bytes are contiguous); want = max(size, BLOCK), never past the end;
 *              - fresh block: otherwise a CAS loop takes [cur, cur + want) from the cursor (never
 *                past the end; a size that does not fit is DoesNotFit, and nothing changed: the
 *                writer keeps its block and record). The old block's unused tail is charged to
 *                the atomic `stranded` counter (fetch_add: bytes no copy reads), and the next
 *                placement starts a new record: a record never spans two blocks.
 *   leave      (Writer::leave) the block's tail [run_pos, run_end) is returned by
 *              CAS(cursor: run_end -> run_pos) when nobody took bytes after it, else charged to
 *              `stranded`; then the gate's fetch_sub(1) (WriterGate::leave). The writer whose
 *              decrement leaves exactly SEALED (the last writer out after the seal) completes the
 *              frame: it sets `ready`.
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
 *   W6 once drained, cursor == units placed + units stranded: every unit below the cursor is
 *      placed or charged, none above it is (a tail is returned or charged, never lost nor
 *      counted twice);
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
 *   BUG_LOST_TAIL              leave drops its tail when the return CAS fails instead of
 *                              charging it.
 *   BUG_RECORD_SPANS_BLOCKS    a fresh block keeps the current record: a record spans two
 *                              blocks, and another writer's placements fall between its entries.
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

#define NREC (NWRITERS * NTRIES) /* at most one record per placement */
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

hidden byte W1 = 1, W2 = 1, W3 = 1, W4 = 1, W5 = 1, W6 = 1;

byte word;             /* SEALED | writers */
byte cursor;           /* the frame's byte cursor, in units (base 0) */
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

/* The tail [rp, re) is charged: fetch_add on `stranded` (inside an atomic step). */
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

/* Writer::refill, bytes: sz units do not fit the block. Extend it, or take a fresh block; ok
 * tells whether the writer now has room for sz units at rp (else DoesNotFit, nothing changed). */
inline refill_bytes() {
  if
  :: re > 0 -> /* a block to extend: CAS(cursor: run_end -> run_end + want) */
     atomic {
       if
       :: cursor == re && rp + sz <= CAPW ->
          cursor = MIN(re + MAX(sz, BLOCK), CAPW);
          mark(re, cursor, FREE, TAKEN, W2);
          re = cursor;
          ok = true
       :: else -> skip
       fi
     }
  :: else -> skip
  fi;
  if
  :: !ok -> /* a fresh block: the CAS loop on the cursor, never past the end */
#ifdef BUG_BLOCK_TWICE
     w = cursor;
     if
     :: w + sz <= CAPW -> /* a plain store */
        atomic {
          cursor = MIN(w + MAX(sz, BLOCK), CAPW);
          mark(w, cursor, FREE, TAKEN, W2);
          ok = true
        }
     :: else -> skip
     fi;
#else
     atomic {
       w = cursor;
       if
       :: w + sz <= CAPW ->
          cursor = MIN(w + MAX(sz, BLOCK), CAPW);
          mark(w, cursor, FREE, TAKEN, W2);
          ok = true
       :: else -> skip
       fi
     };
#endif
     atomic {
       if
       :: ok -> /* the old block's tail charged (fetch_add on stranded), the new block taken */
          if
          :: rp < re -> charge_tail()
          :: else -> skip
          fi;
          rp = w; re = MIN(w + MAX(sz, BLOCK), CAPW);
#ifndef BUG_RECORD_SPANS_BLOCKS
          rec = NOREC; /* a record never spans two blocks */
#endif
          skip
       :: else -> skip /* DoesNotFit */
       fi;
       w = 0
     }
  :: else -> skip
  fi
}

/* Writer::place: sz units at rp into the current record (a new one when it is full or there is
 * none: Writer::refill's fetch_add on the log's counter), then the caller writes the bytes. */
inline place() {
  atomic {
    if
    :: rec == NOREC || rec_n[rec] == E -> rec = nrec; nrec++; assert(rec < NREC)
    :: else -> skip /* the fast path: private */
    fi;
    at = rp;
    rp = rp + sz;
    mark(at, rp, TAKEN, PLACED, W2);
    rec_off[rec * E + rec_n[rec]] = at;
    rec_size[rec * E + rec_n[rec]] = sz;
    rec_n[rec]++;
    placed = placed + sz;
    ok = false
  };
  d_step { /* the bytes written */
    assert(W1 && !recorded);
    mark(at, at + sz, PLACED, WRITTEN, W2);
    at = 0; sz = 0
  }
}

/* Writer::leave: the tail returned or charged, then the gate's fetch_sub(1). */
inline leave() {
  if
  :: rp < re ->
     atomic {
       if
       :: cursor == re -> cursor = rp; mark(rp, re, TAKEN, FREE, W2); ok = true /* returned */
       :: else -> ok = false
       fi
     };
     if
     :: !ok ->
#ifndef BUG_LOST_TAIL
        atomic { charge_tail() }
#else
        skip
#endif
     :: else -> skip
     fi
  :: else -> skip
  fi;
  atomic { word--; w = word; rp = 0; re = 0; rec = NOREC; ok = false };
  if
  :: w == SEALED -> complete() /* the last writer out after the seal */
  :: else -> skip
  fi
}

proctype Writer() {
  byte tries, w, u, sz, at;
  byte rp, re;        /* the block [run_pos, run_end); re == 0: none yet */
  byte rec = NOREC;   /* the current record */
  bool admitted, ok;
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
    u = 0;
    do
    :: u < cursor ->
       assert(W3 && bytes[u] != PLACED && bytes[u] != WRITTEN);
       assert(W6 && (bytes[u] == READ || bytes[u] == STRANDED));
       u++
    :: u >= cursor && u < CAPW -> assert(W6 && bytes[u] == FREE); u++
    :: else -> break
    od;
    assert(W6 && cursor == placed + stranded);
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

init {
  byte n;
  atomic {
    do
    :: n < NWRITERS -> run Writer(); n++
    :: else -> break
    od;
    run Owner()
  }
}

/* L3: the finished frame's copies are eventually recorded. */
ltl recorded_eventually { <> recorded }
