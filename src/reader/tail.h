/*
 * reader/tail.h - the tail's walk (tail.c): a second thread reads the back
 * part of a mapped perf.data's data section ahead of the main walk, and the
 * main walk, when it gets there, delivers that part's distinct samples
 * (each once, with `repeat` = its count) instead of walking it. Private to
 * the reader (reader.c calls it; nothing else does).
 */
#ifndef LBR2PROF_READER_TAIL_H
#define LBR2PROF_READER_TAIL_H

#include <stdint.h>

#include "lbr2prof/error.h"

typedef struct lp_reader lp_reader;
typedef struct rd_tail rd_tail;

/* Starts the tail's thread when the input qualifies (or LBR2PROF_DATA_SPLIT
 * forces it); sets r->tail and r->tail_at. No-op otherwise. */
void rd_tail_start(lp_reader *r);

/* The main walk is at or past r->tail_at (before reading the record
 * there): 1 when the tail's samples are to be delivered now (the caller
 * flushes its queue, then calls rd_tail_replay), 0 to walk on (the tail
 * may have been discarded, or its first record is further on). */
int rd_tail_arrive(lp_reader *r);

/* One replayed distinct sample into r->ev: 1 delivered, 0 done (the walk
 * goes on after the tail's region), -1 error. */
int rd_tail_replay(lp_reader *r, lp_error *err);

/* Whether the tail's thread still walks (caller's thread, before the
 * walk has a thread of its own). Once it has ended, the walk may take the
 * second core: the region is delivered when the walk gets there, or the
 * rest of its replay when the walk is in it already (the replay's
 * decoding, page faults and give-backs then leave the consumer's thread:
 * sqlite-line CS, ~55 ms of replay after the tail's end); a tail that
 * ended with nothing is forgotten here. */
int rd_tail_walking(lp_reader *r);

/* Stops and forgets the tail (a record the tail cannot stand beside). */
void rd_tail_discard(lp_reader *r);

#endif
