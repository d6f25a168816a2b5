/*
 * lbr2prof/lbr2prof.h - umbrella header of the lbr2prof library.
 * Public API prefix: lp_. Each stage has its own header; include this one
 * to get them all.
 */
#ifndef LBR2PROF_H
#define LBR2PROF_H

#define LP_VERSION "0.1.0"

#include "lbr2prof/error.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/binary.h"
#include "lbr2prof/machine.h"
#include "lbr2prof/addrmap.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/unwind.h"
#include "lbr2prof/csprofile.h"
#include "lbr2prof/profgen.h"
#include "lbr2prof/adjust.h"
#include "lbr2prof/breakpad.h"
#include "lbr2prof/symbolicate.h"
#include "lbr2prof/perfwrite.h"
#include "lbr2prof/record.h"
#include "lbr2prof/report.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/cfiunwind.h"

#endif
