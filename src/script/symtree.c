/*
 * symtree.c - the red-black tree of a file's symbols, shaped as perf's:
 * the insertion and erasure of Linux's lib/rbtree.c (rb_insert_color,
 * rb_erase; read, not copied) on nodes held by index, and perf's search
 * (symbols__find). Owns the tree's links and colours; not the symbols'
 * contents (symbols.c).
 */
#include "script/symtree.h"

#define N(i) (t->v[(i)])

static int is_red(const st_tree *t, int32_t i)
{
    return i != ST_NIL && N(i).red;
}

/* __rb_change_child: old's place under its parent (or the root) to new. */
static void change_child(st_tree *t, int32_t old, int32_t new, int32_t parent)
{
    if (parent == ST_NIL)
        t->root = new;
    else if (N(parent).left == old)
        N(parent).left = new;
    else
        N(parent).right = new;
}

/* __rb_rotate_set_parents: new takes old's parent and colour, old goes
 * under new with `red`. */
static void rotate_set_parents(st_tree *t, int32_t old, int32_t new, int red)
{
    int32_t parent = N(old).parent;

    N(new).parent = parent;
    N(new).red = N(old).red;
    N(old).parent = new;
    N(old).red = (uint8_t)red;
    change_child(t, old, new, parent);
}

static void set_pc(st_tree *t, int32_t i, int32_t parent, int red)
{
    N(i).parent = parent;
    N(i).red = (uint8_t)red;
}

/* __rb_insert for a node whose parent is on the left (dir 0) or right
 * (dir 1) of the grandparent: one step; 1 to go on from *node. */
static int insert_step(st_tree *t, int32_t *node, int32_t parent, int dir)
{
    int32_t g = N(parent).parent, uncle = dir ? N(g).left : N(g).right, tmp;

    if (is_red(t, uncle)) {             /* case 1: colour flips */
        set_pc(t, uncle, g, 0);
        set_pc(t, parent, g, 0);
        *node = g;
        N(g).red = 1;
        return 1;
    }
    tmp = dir ? N(parent).left : N(parent).right;
    if (*node == tmp) {                 /* case 2: rotate at parent */
        tmp = dir ? N(*node).right : N(*node).left;
        if (dir) {
            N(parent).left = tmp;
            N(*node).right = parent;
        } else {
            N(parent).right = tmp;
            N(*node).left = parent;
        }
        if (tmp != ST_NIL)
            set_pc(t, tmp, parent, 0);
        set_pc(t, parent, *node, 1);
        parent = *node;
        tmp = dir ? N(*node).left : N(*node).right;
    }
    if (dir) {                          /* case 3: rotate at grandparent */
        N(g).right = tmp;
        N(parent).left = g;
    } else {
        N(g).left = tmp;
        N(parent).right = g;
    }
    if (tmp != ST_NIL)
        set_pc(t, tmp, g, 0);
    rotate_set_parents(t, g, parent, 1);
    return 0;
}

void st_insert(st_tree *t, int32_t i)
{
    int32_t *link = &t->root, parent = ST_NIL, node = i;

    while (*link != ST_NIL) {
        parent = *link;
        link = N(i).start < N(parent).start ? &N(parent).left : &N(parent).right;
    }
    N(i).left = N(i).right = ST_NIL;
    set_pc(t, i, parent, 1);
    *link = i;
    for (;;) {
        parent = N(node).parent;
        if (parent == ST_NIL) {
            N(node).red = 0;
            return;
        }
        if (!N(parent).red)
            return;
        if (!insert_step(t, &node, parent, N(N(parent).parent).right == parent))
            return;
    }
}

/* ____rb_erase_color, one step on the side dir (0: node is the parent's
 * left child). 1 to go on one level up (*parent, *node updated). */
static int erase_step(st_tree *t, int32_t *node, int32_t *parent, int dir)
{
    int32_t p = *parent, s = dir ? N(p).left : N(p).right, t1, t2;

    if (is_red(t, s)) {                 /* case 1: rotate at parent */
        t1 = dir ? N(s).right : N(s).left;
        if (dir) {
            N(p).left = t1;
            N(s).right = p;
        } else {
            N(p).right = t1;
            N(s).left = p;
        }
        set_pc(t, t1, p, 0);
        rotate_set_parents(t, p, s, 1);
        s = t1;
    }
    t1 = dir ? N(s).left : N(s).right;
    if (!is_red(t, t1)) {
        t2 = dir ? N(s).right : N(s).left;
        if (!is_red(t, t2)) {           /* case 2: sibling colour flip */
            set_pc(t, s, p, 1);
            if (N(p).red) {
                N(p).red = 0;
                return 0;
            }
            *node = p;
            *parent = N(p).parent;
            return *parent != ST_NIL;
        }
        t1 = dir ? N(t2).left : N(t2).right; /* case 3: rotate at sibling */
        if (dir) {
            N(s).right = t1;
            N(t2).left = s;
            N(p).left = t2;
        } else {
            N(s).left = t1;
            N(t2).right = s;
            N(p).right = t2;
        }
        if (t1 != ST_NIL)
            set_pc(t, t1, s, 0);
        t1 = s;
        s = t2;
    }
    t2 = dir ? N(s).right : N(s).left;  /* case 4: rotate at parent */
    if (dir) {
        N(p).left = t2;
        N(s).right = p;
    } else {
        N(p).right = t2;
        N(s).left = p;
    }
    set_pc(t, t1, s, 0);
    if (t2 != ST_NIL)
        N(t2).parent = p;
    rotate_set_parents(t, p, s, 0);
    return 0;
}

static void erase_color(st_tree *t, int32_t parent)
{
    int32_t node = ST_NIL;

    while (erase_step(t, &node, &parent, N(parent).right == node))
        ;
}

/* __rb_erase_augmented without augmentation: the parent to rebalance
 * from, or ST_NIL. */
static int32_t erase_node(st_tree *t, int32_t node)
{
    int32_t child = N(node).right, tmp = N(node).left, parent, rebalance;
    int32_t succ, child2;

    if (tmp == ST_NIL) {                /* case 1: at most one child */
        parent = N(node).parent;
        change_child(t, node, child, parent);
        if (child != ST_NIL) {
            set_pc(t, child, parent, N(node).red);
            return ST_NIL;
        }
        return N(node).red ? ST_NIL : parent;
    }
    if (child == ST_NIL) {              /* still case 1: the left child */
        set_pc(t, tmp, N(node).parent, N(node).red);
        change_child(t, node, tmp, N(node).parent);
        return ST_NIL;
    }
    succ = child;
    tmp = N(child).left;
    if (tmp == ST_NIL) {                /* case 2: successor is the right child */
        parent = succ;
        child2 = N(succ).right;
    } else {                            /* case 3: leftmost of the right subtree */
        do {
            parent = succ;
            succ = tmp;
            tmp = N(tmp).left;
        } while (tmp != ST_NIL);
        child2 = N(succ).right;
        N(parent).left = child2;
        N(succ).right = child;
        N(child).parent = succ;
    }
    tmp = N(node).left;
    N(succ).left = tmp;
    N(tmp).parent = succ;
    change_child(t, node, succ, N(node).parent);
    if (child2 != ST_NIL) {
        set_pc(t, child2, parent, 0);
        rebalance = ST_NIL;
    } else {
        rebalance = N(succ).red ? ST_NIL : parent;
    }
    set_pc(t, succ, N(node).parent, N(node).red);
    return rebalance;
}

void st_erase(st_tree *t, int32_t i)
{
    int32_t rebalance = erase_node(t, i);

    if (rebalance != ST_NIL)
        erase_color(t, rebalance);
}

int32_t st_first(const st_tree *t)
{
    int32_t i = t->root;

    while (i != ST_NIL && N(i).left != ST_NIL)
        i = N(i).left;
    return i;
}

int32_t st_next(const st_tree *t, int32_t i)
{
    int32_t p;

    if (N(i).right != ST_NIL) {
        for (i = N(i).right; N(i).left != ST_NIL;)
            i = N(i).left;
        return i;
    }
    while ((p = N(i).parent) != ST_NIL && N(p).right == i)
        i = p;
    return p;
}

int32_t st_find(const st_tree *t, uint64_t ip)
{
    int32_t i = t->root;

    while (i != ST_NIL) {
        const st_sym *s = &N(i);
        if (ip < s->start)
            i = s->left;
        else if (ip > s->end || (ip == s->end && ip != s->start))
            i = s->right;
        else
            return i;
    }
    return ST_NIL;
}
