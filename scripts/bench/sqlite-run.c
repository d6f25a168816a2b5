/* sqlite-run.c - the driver of scripts/bench.sh's large-program case: runs
 * an SQL script (scripts/bench/sqlite-work.sql) against an in-memory
 * database of the SQLite amalgamation, with the table cfg(n) holding the
 * size given on the command line. Usage: sqlite-run SCRIPT N. Prints one
 * checksum of every row the script returned (so two builds can be seen to
 * do the same work). Owns the driver only: the SQL is the script's, the
 * building and recording bench.sh's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "sqlite3.h"

static int row(void *arg, int n, char **vals, char **names)
{
    uint64_t *h = arg;
    (void)names;
    for (int i = 0; i < n; i++)
        for (const char *p = vals[i] ? vals[i] : "\1"; *p; p++)
            *h = (*h ^ (unsigned char)*p) * 1099511628211ull;
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap && !(s = realloc(s, cap *= 2)))
            break;
    }
    fclose(f);
    if (s)
        s[len] = 0;
    return s;
}

int main(int argc, char **argv)
{
    sqlite3 *db;
    char *msg = NULL, cfg[96], *sql;
    uint64_t h = 14695981039346656037ull;
    if (argc != 3 || !(sql = slurp(argv[1]))) {
        fprintf(stderr, "usage: sqlite-run SCRIPT N (script readable)\n");
        return 2;
    }
    snprintf(cfg, sizeof cfg, "CREATE TABLE cfg(n INTEGER); INSERT INTO cfg VALUES(%ld);",
             strtol(argv[2], NULL, 10));
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, cfg, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, sql, row, &h, &msg) != SQLITE_OK) {
        fprintf(stderr, "sqlite-run: %s\n", msg ? msg : sqlite3_errmsg(db));
        return 1;
    }
    printf("%016llx\n", (unsigned long long)h);
    sqlite3_close(db);
    free(sql);
    return 0;
}
