/* sqlite-work.c - the SQL workload of scripts/pgo-bench.sh: an in-memory
 * database driven through the SQLite amalgamation's C API, as an
 * application would (prepared statements, transactions, joins, grouping,
 * sorting, indexes, string and date functions, a recursive CTE, updates
 * and deletes). Usage: sqlite-work ROWS SEED. The output is one checksum
 * line per query: the same for every build of the same source, so it
 * checks that a profile changed the speed and not the behaviour. Owns the
 * workload only; building, recording and timing are the script's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

typedef struct { uint64_t s; } rng;

static uint64_t next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static void die(sqlite3 *db, const char *what)
{
    fprintf(stderr, "sqlite-work: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sqlite-work: %s: %s\n", sql, msg);
        exit(1);
    }
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        die(db, sql);
    return st;
}

static void word(rng *r, char *buf, size_t n)
{
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
                                "qu", "ex", "an", "or", "is", "ul", "ze", "py"};
    size_t k = 2 + next(r) % 4, at = 0;
    for (size_t i = 0; i < k && at + 3 < n; i++) {
        memcpy(buf + at, syl[next(r) % 16], 2);
        at += 2;
    }
    buf[at] = 0;
}

static void fill(sqlite3 *db, rng *r, int rows)
{
    char name[32], city[32], note[96];
    exec(db, "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT,"
             " born TEXT, score REAL);"
             "CREATE TABLE item(id INTEGER PRIMARY KEY, title TEXT, price REAL, cat INT);"
             "CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INT, item INT, qty INT,"
             " day TEXT, note TEXT);");
    exec(db, "BEGIN");
    sqlite3_stmt *c = prep(db, "INSERT INTO customer VALUES(?,?,?,?,?)");
    for (int i = 1; i <= rows / 8 + 1; i++) {
        word(r, name, sizeof name);
        word(r, city, 8);
        sqlite3_bind_int(c, 1, i);
        sqlite3_bind_text(c, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(c, 3, city, -1, SQLITE_TRANSIENT);
        char born[16];
        snprintf(born, sizeof born, "%04d-%02d-%02d", 1940 + (int)(next(r) % 60),
                 1 + (int)(next(r) % 12), 1 + (int)(next(r) % 28));
        sqlite3_bind_text(c, 4, born, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(c, 5, (double)(next(r) % 10000) / 100.0);
        if (sqlite3_step(c) != SQLITE_DONE) die(db, "insert customer");
        sqlite3_reset(c);
    }
    sqlite3_finalize(c);
    sqlite3_stmt *it = prep(db, "INSERT INTO item VALUES(?,?,?,?)");
    for (int i = 1; i <= rows / 16 + 1; i++) {
        word(r, name, sizeof name);
        sqlite3_bind_int(it, 1, i);
        sqlite3_bind_text(it, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(it, 3, (double)(next(r) % 50000) / 100.0);
        sqlite3_bind_int(it, 4, (int)(next(r) % 23));
        if (sqlite3_step(it) != SQLITE_DONE) die(db, "insert item");
        sqlite3_reset(it);
    }
    sqlite3_finalize(it);
    sqlite3_stmt *o = prep(db, "INSERT INTO orders(cust,item,qty,day,note) VALUES(?,?,?,?,?)");
    for (int i = 0; i < rows; i++) {
        sqlite3_bind_int(o, 1, 1 + (int)(next(r) % (uint64_t)(rows / 8 + 1)));
        sqlite3_bind_int(o, 2, 1 + (int)(next(r) % (uint64_t)(rows / 16 + 1)));
        sqlite3_bind_int(o, 3, 1 + (int)(next(r) % 9));
        char day[16];
        snprintf(day, sizeof day, "2024-%02d-%02d", 1 + (int)(next(r) % 12),
                 1 + (int)(next(r) % 28));
        sqlite3_bind_text(o, 4, day, -1, SQLITE_TRANSIENT);
        word(r, name, sizeof name);
        word(r, city, sizeof city);
        snprintf(note, sizeof note, "%s %s %s", name, city, i % 3 ? "ok" : "late");
        sqlite3_bind_text(o, 5, note, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(o) != SQLITE_DONE) die(db, "insert orders");
        sqlite3_reset(o);
    }
    sqlite3_finalize(o);
    exec(db, "COMMIT");
}

/* runs a query and prints its row count and a checksum of every column */
static void query(sqlite3 *db, const char *tag, const char *sql)
{
    sqlite3_stmt *st = prep(db, sql);
    uint64_t h = 1469598103934665603ull, rows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        rows++;
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            for (; t && *t; t++)
                h = (h ^ *t) * 1099511628211ull;
            h = (h ^ 0xff) * 1099511628211ull;
        }
    }
    if (rc != SQLITE_DONE) die(db, tag);
    sqlite3_finalize(st);
    printf("%-10s %8llu rows  %016llx\n", tag, (unsigned long long)rows,
           (unsigned long long)h);
}

static void queries(sqlite3 *db)
{
    query(db, "join", "SELECT c.city, count(*), sum(o.qty*i.price) FROM orders o"
                      " JOIN customer c ON c.id=o.cust JOIN item i ON i.id=o.item"
                      " GROUP BY c.city ORDER BY 3 DESC");
    query(db, "topcust", "SELECT c.name, sum(o.qty) s FROM customer c JOIN orders o"
                         " ON o.cust=c.id GROUP BY c.id ORDER BY s DESC, c.name LIMIT 50");
    query(db, "like", "SELECT count(*), max(length(note)) FROM orders"
                      " WHERE note LIKE '%ka%lo%' OR note GLOB '*ze*'");
    query(db, "dates", "SELECT strftime('%m', day) m, count(*), avg(qty) FROM orders"
                       " WHERE julianday(day) - julianday('2024-01-01') > 30 GROUP BY m");
    query(db, "window", "SELECT cust, day, sum(qty) OVER (PARTITION BY cust ORDER BY day"
                        " ROWS 3 PRECEDING) FROM orders WHERE cust % 7 = 1");
    query(db, "subq", "SELECT i.cat, count(*) FROM item i WHERE i.price >"
                      " (SELECT avg(price) FROM item WHERE cat=i.cat) GROUP BY i.cat");
    query(db, "cte", "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n"
                     " WHERE x < 2000) SELECT sum(x*x % 97), group_concat(x % 10, '')"
                     " FROM n");
    query(db, "strings", "SELECT upper(substr(name,1,3)) || lower(city), replace(name,"
                         "'a','@'), printf('%08.3f', score) FROM customer ORDER BY 1, 2");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sqlite-work ROWS SEED\n");
        return 2;
    }
    int rows = atoi(argv[1]);
    rng r = {0x9e3779b97f4a7c15ull ^ (uint64_t)strtoull(argv[2], NULL, 10)};
    sqlite3 *db;
    if (rows < 16 || sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, "sqlite-work: ROWS must be >= 16, or no database\n");
        return 2;
    }
    fill(db, &r, rows);
    queries(db);
    exec(db, "CREATE INDEX o_cust ON orders(cust); CREATE INDEX o_day ON orders(day);"
             "CREATE INDEX c_city ON customer(city)");
    queries(db);
    exec(db, "UPDATE orders SET qty = qty + 1 WHERE day < '2024-04-01';"
             "DELETE FROM orders WHERE note LIKE '%late' AND qty > 7");
    query(db, "after", "SELECT count(*), sum(qty), total(length(note)) FROM orders");
    sqlite3_close(db);
    return 0;
}
