/*
 * format.h - the numbers of LLVM's binary sample-profile formats that the
 * readers (src/profile/) and writers (src/writer/) share: magic, version,
 * extbinary section types and section flags (SampleProf.h). The low 32
 * bits of a section's flags are common to all sections, the high 32 bits
 * belong to its type.
 */
#ifndef LBR2PROF_PROFILE_FORMAT_H
#define LBR2PROF_PROFILE_FORMAT_H

#include <stdint.h>

/* SPMagic(format): "SPROF42" then the format byte, as a ULEB128 number */
#define SP_MAGIC(fmt)                                                        \
    (((uint64_t)'S' << 56) | ((uint64_t)'P' << 48) | ((uint64_t)'R' << 40) | \
     ((uint64_t)'O' << 32) | ((uint64_t)'F' << 24) | ((uint64_t)'4' << 16) | \
     ((uint64_t)'2' << 8) | (uint64_t)(fmt))

enum {
    SPF_COMPACT_BINARY = 0x2,   /* removed in LLVM 17 */
    SPF_GCC = 0x3,
    SPF_EXT_BINARY = 0x4,
    SPF_BINARY = 0xff,
    SP_VERSION = 103,

    /* section types (SecType) */
    SEC_PROF_SUMMARY = 1,
    SEC_NAME_TABLE = 2,
    SEC_PROFILE_SYMBOL_LIST = 3,
    SEC_FUNC_OFFSET_TABLE = 4,
    SEC_FUNC_METADATA = 5,
    SEC_CS_NAME_TABLE = 6,
    SEC_LBR_PROFILE = 0x20,     /* SecFuncProfileFirst */

    /* common flags (low 32 bits) */
    SEC_FLAG_COMPRESS = 1,
    SEC_FLAG_FLAT = 2,
    /* NameTable */
    SEC_FLAG_MD5_NAME = 1,
    SEC_FLAG_FIXED_LENGTH_MD5 = 2,
    SEC_FLAG_UNIQ_SUFFIX = 4,
    /* ProfileSummary */
    SEC_FLAG_PARTIAL = 1,
    SEC_FLAG_FULL_CONTEXT = 2,
    SEC_FLAG_FS_DISCRIMINATOR = 4,
    SEC_FLAG_PRE_INLINED = 16,
    /* FuncOffsetTable */
    SEC_FLAG_ORDERED = 1,
    /* FuncMetadata */
    SEC_FLAG_PROBE_BASED = 1,
    SEC_FLAG_HAS_ATTRIBUTE = 2,
};

/* a section-specific flag of a section's flags word */
#define SEC_HAS(flags, f) (((flags) >> 32) & (uint64_t)(f))

#endif
