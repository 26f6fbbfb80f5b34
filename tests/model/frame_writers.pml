/*
 * The multi-writer frame protocol: worker threads place uploads into one open frame at the same
 * time, and the owner thread finishes the frame once every writer is done. docs/model.md says
 * what it covers and how to run it.
 *
 * This is the protocol the implementation must follow; the model is written ahead of it. When
 * the implementation lands, this comment maps each step to the function that performs it, as
 * slot_ring.pml and byte_ring.pml do.
 *
 * The protocol:
 *   word       one atomic word: SEALED (a bit) | the number of writers writing now.
 *   begin      a writer is admitted only by a compare-and-swap from an unsealed word w to w + 1
 *              (a CAS loop: load; if SEALED, refused; else CAS(w, w + 1), retry on failure).
 *              A refused writer changed nothing: it never incremented the count.
 *   place      an admitted writer takes its bytes from the frame's bump cursor by a CAS (never
 *              past the frame's capacity: DoesNotFit otherwise), writes them, and publishes the
 *              upload (a lock-free push onto the frame's upload list).
 *   end        fetch_sub(1). The writer whose decrement leaves exactly SEALED (the last writer out
 *              after the seal) completes the frame: it sets `ready`.
 *   finish     the owner's fetch_or(SEALED). If no writer was writing, the owner completes the
 *              frame itself. Otherwise, by the caller's choice, finish waits until `ready`, or
 *              reports the writers still writing (an error) and is called again later; the
 *              frame stays sealed either way. Once ready, finish records one copy per published
 *              upload.
 *
 * Model: NWRITERS writer processes, each trying NTRIES uploads of one unit into a frame of
 * CAPW units; one Owner. Writing is two steps (half written, written) so that a copy recorded
 * in between would be seen.
 *
 * Properties:
 *   W1 no writer is admitted after the seal, and none writes into a frame whose copies were
 *      recorded;
 *   W2 placements never overlap (each unit is placed once);
 *   W3 every recorded copy reads fully written bytes (no copy of half-written bytes), and every
 *      upload placed is recorded (none lost);
 *   W4 the frame is completed (ready) exactly once;
 *   L3 (recorded) under weak fairness, a finished frame's copies are eventually recorded.
 *
 * Planted bugs (-D switches):
 *   BUG_CHECK_THEN_INCREMENT   begin loads the word, sees it unsealed, then increments in a
 *                              second step: a seal in between is missed.
 *   BUG_INCREMENT_THEN_CHECK   begin is fetch_add(1) then a look at SEALED; a refused writer
 *                              decrements again, and if that leaves exactly SEALED it completes
 *                              the frame, as the last writer does: twice.
 *   BUG_REFUSED_NEVER_COMPLETES  as BUG_INCREMENT_THEN_CHECK, but a refused writer never
 *                              completes the frame: when its transient count hides the last
 *                              writer, nobody does (finish waits forever).
 *   BUG_FINISH_NO_WAIT         finish records the copies right after sealing, writers or not.
 */

#ifndef NWRITERS
#define NWRITERS 3
#endif
#ifndef NTRIES
#define NTRIES 1 /* uploads each writer tries */
#endif
#ifndef CAPW
#define CAPW 2 /* units of the frame */
#endif

#define SEALED 8 /* above any writer count (NWRITERS < 8) */
#define COUNT(w) ((w) & 7)

hidden byte W1 = 1, W2 = 1, W3 = 1, W4 = 1;

byte word;           /* SEALED | writers */
byte cursor;         /* the bump cursor, in units */
byte bytes[CAPW];    /* 0 free, 1 placed, 2 half written, 3 written */
byte published;      /* uploads on the frame's list */
byte placed;         /* ghost: placements made */
bool ready;          /* completed: sealed and no writer writing */
bool recorded;       /* the owner recorded the frame's copies */
bool sealed_ghost;   /* ghost: finish has sealed */

/* Whoever completes the frame: the owner at the seal, or the last writer out after it. */
inline complete() {
  atomic { assert(W4 && !ready); ready = true }
}

proctype Writer() {
  byte tries, w, u;
  bool admitted;
  do
  :: tries < NTRIES ->
     tries++;
     /* begin */
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
     if
     :: admitted ->
        assert(W1 && !recorded);
        /* place: CAS on the cursor, never past the capacity */
        atomic {
          if
          :: cursor < CAPW -> u = cursor; cursor++; assert(W2 && bytes[u] == 0); bytes[u] = 1; placed++
          :: else -> u = CAPW /* DoesNotFit */
          fi
        };
        if
        :: u < CAPW ->
           assert(W1 && !recorded); bytes[u] = 2; /* writing */
           assert(W1 && !recorded); bytes[u] = 3; /* written */
           published++                            /* the lock-free list push */
        :: else -> skip
        fi;
        /* end: fetch_sub(1) */
        atomic { word--; w = word };
        if
        :: w == SEALED -> complete() /* the last writer out after the seal */
        :: else -> skip
        fi
     :: else -> skip
     fi;
     atomic { w = 0; u = 0; admitted = false }
  :: else -> break
  od
}

/* The copies finish records: one per published upload, each reading written bytes. */
inline record() {
  d_step {
    recorded = true;
    assert(W3 && published == placed);
    i = 0;
    do
    :: i < cursor && i < CAPW -> assert(W3 && bytes[i] == 3); i++
    :: else -> break
    od;
    i = 0
  }
}

proctype Owner() {
  byte w, i;
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
