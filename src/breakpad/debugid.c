/*
 * debugid.c - Breakpad debug ids and code ids from ELF build-ids.
 * Owns the byte-order rule only (dump_syms' FileID: the first 16 bytes as a
 * GUID whose first three fields are byte-swapped, uppercase hex, age 0);
 * reading the build-id out of an ELF file is dump.c's.
 */
#include <stdio.h>
#include <string.h>

#include "lbr2prof/breakpad.h"

static const char hexdig[] = "0123456789ABCDEF";

void lp_bp_debug_id(const uint8_t *id, size_t len, char out[34])
{
    /* GUID field order: bytes 3 2 1 0, 5 4, 7 6, then 8..15 as they are. */
    static const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    uint8_t b[16] = {0};
    int i;

    memcpy(b, id, len < 16 ? len : 16);
    for (i = 0; i < 16; i++) {
        out[2 * i] = hexdig[b[order[i]] >> 4];
        out[2 * i + 1] = hexdig[b[order[i]] & 15];
    }
    out[32] = '0'; /* age: always 0 for ELF */
    out[33] = '\0';
}

void lp_bp_code_id(const uint8_t *id, size_t len, char *out)
{
    size_t i;

    for (i = 0; i < len; i++) {
        out[2 * i] = hexdig[id[i] >> 4];
        out[2 * i + 1] = hexdig[id[i] & 15];
    }
    out[2 * len] = '\0';
}
