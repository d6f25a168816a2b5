/*
 * symtree.h - a file's symbols in the red-black tree perf keeps them in
 * (struct rb_root_cached of struct symbol, keyed by start): where symbols
 * overlap, which one an address finds depends on the tree's shape, so
 * the shape is perf's - Linux's lib/rbtree.c insertion and erasure,
 * replayed in perf's order (symtree.c). Not installed.
 */
#ifndef LBR2PROF_SC_SYMTREE_H
#define LBR2PROF_SC_SYMTREE_H

#include <stddef.h>
#include <stdint.h>

#define ST_NIL (-1)

typedef struct st_sym {
    uint64_t start, end;        /* [start, end); end == start: size 0 */
    uint8_t bind, type, red;
    int32_t left, right, parent; /* indexes into the array, ST_NIL */
    char *name;
} st_sym;

typedef struct st_tree {
    st_sym *v;                  /* symbols, erased ones included */
    size_t n, cap;
    int32_t root;
} st_tree;

/* __symbols__insert: v[i] (already in the array) into the tree. */
void st_insert(st_tree *t, int32_t i);
/* rb_erase. */
void st_erase(st_tree *t, int32_t i);
/* In order: the first node, the next one (ST_NIL at the end). */
int32_t st_first(const st_tree *t);
int32_t st_next(const st_tree *t, int32_t i);
/* symbols__find: the first node on the search path whose range holds
 * ip (a size-0 symbol holds its own address), or ST_NIL. */
int32_t st_find(const st_tree *t, uint64_t ip);

#endif
