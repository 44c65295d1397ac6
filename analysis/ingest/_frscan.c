/* Fast path for Flight Recorder pickles: opcodes straight to columns, no per-entry objects.
 *
 * The pickle is run on a small machine of its own: every value becomes a node in one
 * array (scalars inline, strings as spans of the input, containers as spans of a child
 * array), the memo holds node ids, so shared objects stay shared exactly as the
 * unpickler would share them. The entries list is then read column by column: integer
 * fields into int64 arrays, other fields grouped (by identity, then by strict content)
 * into codes and one Python object per distinct value, call stacks grouped by the
 * identity of their frames. Only those distinct values, and everything outside
 * "entries", become Python objects.
 *
 * The scanner accepts only what FR writers emit (protocols 2-5, the opcodes of plain
 * dicts, lists, tuples, str, int, float, bool and None) and only well-formed dumps.
 * Anything else, or anything it is unsure of, makes scan() return None, and the caller
 * takes the full path (the class-refusing Unpickler and the Python parser), which gives
 * the exact result or error. So this file never decides that a dump is bad; it only
 * speeds up the good ones, and it never runs code, never reads out of bounds and keeps
 * its memory within a bound set by the input size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { T_NONE, T_FALSE, T_TRUE, T_INT, T_FLOAT, T_STR, T_LIST, T_TUPLE, T_DICT };

typedef struct {
    uint8_t tag;
    uint32_t n;   /* str: bytes; list/tuple: children; dict: 2 x pairs */
    uint32_t cap; /* containers: reserved child slots */
    int64_t v;    /* int value, float bits, str offset, or container child offset */
} Node;

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    size_t frame_end; /* where the current FRAME's bytes end (0: none yet) */
    Node *nodes;
    size_t nnodes, capnodes;
    uint32_t *kids;
    size_t nkids, capkids;
    uint32_t *stack;
    size_t nstack, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    uint32_t *memo; /* node id + 1; 0 = empty */
    size_t capmemo, memo_len;
    size_t memo_end; /* one past the highest slot set: the slots to clear for the next scan */
    size_t bytes, max_bytes; /* memory taken, and the most it may take */
    int64_t budget;          /* steps left for content hashing and comparing */
} Scan;

#define FAIL_IF(cond) \
    do {              \
        if (cond)     \
            return -1; \
    } while (0)

static int grow(Scan *s, void **buf, size_t *cap, size_t need, size_t item) {
    if (need <= *cap)
        return 0;
    size_t newcap = *cap ? *cap : 64;
    while (newcap < need) {
        FAIL_IF(newcap > SIZE_MAX / 4 / item);
        newcap *= 2;
    }
    size_t added = (newcap - *cap) * item;
    FAIL_IF(s->bytes + added > s->max_bytes);
    void *p = realloc(*buf, newcap * item);
    FAIL_IF(p == NULL);
    s->bytes += added;
    *buf = p;
    *cap = newcap;
    return 0;
}

#define GROW(s, field, capfield, need) \
    ((need) <= (s)->capfield ? 0 : grow((s), (void **)&(s)->field, &(s)->capfield, (need), sizeof(*(s)->field)))

static int64_t new_node(Scan *s, uint8_t tag, uint32_t n, int64_t v) {
    FAIL_IF(s->nnodes >= UINT32_MAX - 1);
    FAIL_IF(GROW(s, nodes, capnodes, s->nnodes + 1));
    Node *nd = &s->nodes[s->nnodes];
    nd->tag = tag;
    nd->n = n;
    nd->cap = 0;
    nd->v = v;
    return (int64_t)s->nnodes++;
}

static int push(Scan *s, uint32_t id) {
    FAIL_IF(GROW(s, stack, capstack, s->nstack + 1));
    s->stack[s->nstack++] = id;
    return 0;
}

static int push_new(Scan *s, uint8_t tag, uint32_t n, int64_t v) {
    int64_t id = new_node(s, tag, n, v);
    FAIL_IF(id < 0);
    return push(s, (uint32_t)id);
}

static size_t fence(const Scan *s) { return s->nmarks ? s->marks[s->nmarks - 1] : 0; }

static int read_bytes(Scan *s, size_t k, const uint8_t **out) {
    FAIL_IF(k > s->size - s->pos);
    *out = s->data + s->pos;
    s->pos += k;
    return 0;
}

static uint64_t le(const uint8_t *p, int k) {
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Append k child ids to a container; its span moves to the end of the child array,
 * doubling, when full, so repeated single appends stay linear. */
static int add_kids(Scan *s, uint32_t c, const uint32_t *items, size_t k) {
    Node *nd = &s->nodes[c];
    if ((size_t)nd->n + k > nd->cap) {
        size_t want = (size_t)nd->n + k, newcap = nd->cap ? (size_t)nd->cap * 2 : 4;
        if (newcap < want)
            newcap = want;
        FAIL_IF(newcap > UINT32_MAX);
        if ((size_t)nd->v + nd->cap == s->nkids) { /* last span: grow in place */
            FAIL_IF(GROW(s, kids, capkids, (size_t)nd->v + newcap));
        } else {
            FAIL_IF(GROW(s, kids, capkids, s->nkids + newcap));
            if (nd->n)
                memmove(s->kids + s->nkids, s->kids + nd->v, (size_t)nd->n * sizeof(uint32_t));
            nd->v = (int64_t)s->nkids;
        }
        s->nkids = (size_t)nd->v + newcap;
        nd->cap = (uint32_t)newcap;
    }
    memcpy(s->kids + nd->v + nd->n, items, k * sizeof(uint32_t));
    nd->n += (uint32_t)k;
    return 0;
}

static int hashable_key(const Scan *s, uint32_t id) {
    uint8_t t = s->nodes[id].tag;
    return t == T_NONE || t == T_FALSE || t == T_TRUE || t == T_INT || t == T_STR;
}

static int utf8_ok(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
        } else if (c < 0xC2) {
            return 0;
        } else if (c < 0xE0) {
            if (n - i < 2 || (p[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c < 0xF0) { /* surrogates (ED A0..BF) pass, as pickle's "surrogatepass" */
            if (n - i < 3 || (p[i + 1] & 0xC0) != 0x80 || (p[i + 2] & 0xC0) != 0x80)
                return 0;
            if (c == 0xE0 && p[i + 1] < 0xA0)
                return 0;
            i += 3;
        } else if (c < 0xF5) {
            if (n - i < 4 || (p[i + 1] & 0xC0) != 0x80 || (p[i + 2] & 0xC0) != 0x80 || (p[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] > 0x8F))
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int memo_put(Scan *s, size_t idx) {
    FAIL_IF(s->nstack <= fence(s));
    FAIL_IF(idx > s->pos + 65536); /* a writer numbers memo slots as it goes */
    if (idx >= s->capmemo) {
        size_t old = s->capmemo;
        FAIL_IF(GROW(s, memo, capmemo, idx + 1));
        memset(s->memo + old, 0, (s->capmemo - old) * sizeof(uint32_t));
    }
    if (!s->memo[idx])
        s->memo_len++;
    if (idx >= s->memo_end)
        s->memo_end = idx + 1;
    s->memo[idx] = s->stack[s->nstack - 1] + 1;
    return 0;
}

static int memo_get(Scan *s, size_t idx) {
    FAIL_IF(idx >= s->capmemo || !s->memo[idx]);
    return push(s, s->memo[idx] - 1);
}

static int pop_mark(Scan *s, size_t *mark) {
    FAIL_IF(!s->nmarks);
    *mark = s->marks[--s->nmarks];
    return 0;
}

static int build_seq(Scan *s, uint8_t tag, size_t from) {
    int64_t id = new_node(s, tag, 0, 0);
    FAIL_IF(id < 0);
    size_t k = s->nstack - from;
    if (k)
        FAIL_IF(add_kids(s, (uint32_t)id, s->stack + from, k));
    s->nstack = from;
    return push(s, (uint32_t)id);
}

/* The target sits just below ``from``, and never at or below a mark still open
 * (the unpickler refuses that as an unexpected MARK). */
static int set_items(Scan *s, size_t from) {
    size_t k = s->nstack - from;
    FAIL_IF(from <= fence(s) || (k & 1));
    uint32_t d = s->stack[from - 1];
    FAIL_IF(s->nodes[d].tag != T_DICT);
    for (size_t i = from; i < s->nstack; i += 2)
        FAIL_IF(!hashable_key(s, s->stack[i]));
    if (k)
        FAIL_IF(add_kids(s, d, s->stack + from, k));
    s->nstack = from;
    return 0;
}

static int append_items(Scan *s, size_t from) {
    FAIL_IF(from <= fence(s));
    uint32_t l = s->stack[from - 1];
    FAIL_IF(s->nodes[l].tag != T_LIST);
    size_t k = s->nstack - from;
    if (k)
        FAIL_IF(add_kids(s, l, s->stack + from, k));
    s->nstack = from;
    return 0;
}

/* Run the opcodes; the id of the value STOP returns, or -1. */
static int64_t run(Scan *s) {
    const uint8_t *b;
    for (;;) {
        FAIL_IF(s->pos >= s->size);
        uint8_t op = s->data[s->pos++];
        size_t mark;
        switch (op) {
        case 0x80: /* PROTO */
            FAIL_IF(read_bytes(s, 1, &b) || b[0] > 5);
            break;
        case 0x95: /* FRAME: the unpickler only checks the frame is there. One that starts */
            /* before the current frame ends (no pickler writes that) CPython's unpickler reads */
            /* one way from a file and another from bytes: such input is left to it. */
            FAIL_IF(s->pos - 1 < s->frame_end || read_bytes(s, 8, &b));
            FAIL_IF(le(b, 8) > s->size - s->pos);
            s->frame_end = s->pos + (size_t)le(b, 8);
            break;
        case '}':
            FAIL_IF(push_new(s, T_DICT, 0, 0));
            break;
        case ']':
            FAIL_IF(push_new(s, T_LIST, 0, 0));
            break;
        case ')':
            FAIL_IF(push_new(s, T_TUPLE, 0, 0));
            break;
        case 'N':
            FAIL_IF(push_new(s, T_NONE, 0, 0));
            break;
        case 0x88:
            FAIL_IF(push_new(s, T_TRUE, 0, 0));
            break;
        case 0x89:
            FAIL_IF(push_new(s, T_FALSE, 0, 0));
            break;
        case 'J':
            FAIL_IF(read_bytes(s, 4, &b));
            FAIL_IF(push_new(s, T_INT, 0, (int32_t)(uint32_t)le(b, 4)));
            break;
        case 'K':
            FAIL_IF(read_bytes(s, 1, &b));
            FAIL_IF(push_new(s, T_INT, 0, b[0]));
            break;
        case 'M':
            FAIL_IF(read_bytes(s, 2, &b));
            FAIL_IF(push_new(s, T_INT, 0, (int64_t)le(b, 2)));
            break;
        case 0x8a: { /* LONG1, up to 8 bytes of two's complement */
            FAIL_IF(read_bytes(s, 1, &b));
            int k = b[0];
            FAIL_IF(k > 8 || read_bytes(s, (size_t)k, &b));
            uint64_t v = k ? le(b, k) : 0;
            if (k && k < 8 && (b[k - 1] & 0x80))
                v |= ~(uint64_t)0 << (8 * k);
            FAIL_IF(push_new(s, T_INT, 0, (int64_t)v));
            break;
        }
        case 'G': { /* BINFLOAT, big-endian */
            FAIL_IF(read_bytes(s, 8, &b));
            uint64_t v = 0;
            for (int i = 0; i < 8; i++)
                v = (v << 8) | b[i];
            FAIL_IF(push_new(s, T_FLOAT, 0, (int64_t)v));
            break;
        }
        case 0x8c: /* SHORT_BINUNICODE */
        case 'X':  /* BINUNICODE */
        case 0x8d: /* BINUNICODE8 */ {
            int w = op == 0x8c ? 1 : op == 'X' ? 4 : 8;
            FAIL_IF(read_bytes(s, (size_t)w, &b));
            uint64_t k = le(b, w);
            FAIL_IF(k > UINT32_MAX || k > s->size - s->pos);
            size_t at = s->pos;
            s->pos += (size_t)k;
            FAIL_IF(!utf8_ok(s->data + at, (size_t)k));
            FAIL_IF(push_new(s, T_STR, (uint32_t)k, (int64_t)at));
            break;
        }
        case '(':
            FAIL_IF(GROW(s, marks, capmarks, s->nmarks + 1));
            s->marks[s->nmarks++] = s->nstack;
            break;
        case 'q':
            FAIL_IF(read_bytes(s, 1, &b) || memo_put(s, b[0]));
            break;
        case 'r':
            FAIL_IF(read_bytes(s, 4, &b) || memo_put(s, (size_t)le(b, 4)));
            break;
        case 0x94: /* MEMOIZE */
            FAIL_IF(memo_put(s, s->memo_len));
            break;
        case 'h':
            FAIL_IF(read_bytes(s, 1, &b) || memo_get(s, b[0]));
            break;
        case 'j':
            FAIL_IF(read_bytes(s, 4, &b) || memo_get(s, (size_t)le(b, 4)));
            break;
        case 'a': /* APPEND */
            FAIL_IF(s->nstack < fence(s) + 2);
            FAIL_IF(append_items(s, s->nstack - 1));
            break;
        case 'e': /* APPENDS */
            FAIL_IF(pop_mark(s, &mark) || append_items(s, mark));
            break;
        case 's': /* SETITEM */
            FAIL_IF(s->nstack < fence(s) + 3);
            FAIL_IF(set_items(s, s->nstack - 2));
            break;
        case 'u': /* SETITEMS */
            FAIL_IF(pop_mark(s, &mark) || set_items(s, mark));
            break;
        case 't':
            FAIL_IF(pop_mark(s, &mark) || build_seq(s, T_TUPLE, mark));
            break;
        case 'l':
            FAIL_IF(pop_mark(s, &mark) || build_seq(s, T_LIST, mark));
            break;
        case 'd':
            FAIL_IF(pop_mark(s, &mark));
            FAIL_IF(build_seq(s, T_DICT, mark));
            {
                const Node *d = &s->nodes[s->stack[s->nstack - 1]];
                FAIL_IF(d->n & 1);
                for (uint32_t i = 0; i < d->n; i += 2)
                    FAIL_IF(!hashable_key(s, s->kids[d->v + i]));
            }
            break;
        case 0x85:
        case 0x86:
        case 0x87: {
            size_t k = (size_t)(op - 0x84);
            FAIL_IF(s->nstack < fence(s) + k);
            FAIL_IF(build_seq(s, T_TUPLE, s->nstack - k));
            break;
        }
        case '.': /* STOP */
            FAIL_IF(s->nstack <= fence(s));
            return s->stack[s->nstack - 1];
        default: /* everything else (classes, calls, text protocols, bytes, sets) */
            return -1;
        }
    }
}

/* ---- reading the node graph ---------------------------------------------------- */

static const uint32_t *kids_of(const Scan *s, uint32_t id) { return s->kids + s->nodes[id].v; }

static int str_is(const Scan *s, uint32_t id, const char *text, size_t len) {
    const Node *nd = &s->nodes[id];
    return nd->tag == T_STR && nd->n == len && memcmp(s->data + nd->v, text, len) == 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

#define CONTENT_DEPTH 8

/* A strict content hash: equal hashes are checked by same_content. Floats, dicts and
 * deep values count by identity, so grouping never merges what Python tells apart. */
static uint64_t content_hash(Scan *s, uint32_t id, int depth) {
    const Node *nd = &s->nodes[id];
    s->budget--;
    uint64_t h = mix(0x51ed27, nd->tag);
    switch (nd->tag) {
    case T_INT:
        return mix(h, (uint64_t)nd->v);
    case T_STR: {
        const uint8_t *p = s->data + nd->v;
        s->budget -= nd->n / 16;
        for (uint32_t i = 0; i < nd->n; i++)
            h = (h ^ p[i]) * 0x100000001b3ULL;
        return mix(h, nd->n);
    }
    case T_LIST:
    case T_TUPLE:
        if (depth < CONTENT_DEPTH) {
            const uint32_t *k = kids_of(s, id);
            h = mix(h, nd->n);
            for (uint32_t i = 0; i < nd->n && s->budget > 0; i++)
                h = mix(h, content_hash(s, k[i], depth + 1));
            return h;
        }
        return mix(h ^ 0xabc, id);
    case T_FLOAT:
    case T_DICT:
        return mix(h ^ 0xabc, id);
    default:
        return h;
    }
}

static int same_content(Scan *s, uint32_t a, uint32_t b, int depth) {
    if (a == b)
        return 1;
    const Node *x = &s->nodes[a], *y = &s->nodes[b];
    s->budget--;
    if (x->tag != y->tag || s->budget <= 0)
        return 0;
    switch (x->tag) {
    case T_NONE:
    case T_TRUE:
    case T_FALSE:
        return 1;
    case T_INT:
        return x->v == y->v;
    case T_STR:
        return x->n == y->n && memcmp(s->data + x->v, s->data + y->v, x->n) == 0;
    case T_LIST:
    case T_TUPLE:
        if (depth >= CONTENT_DEPTH || x->n != y->n)
            return 0;
        for (uint32_t i = 0; i < x->n; i++)
            if (!same_content(s, kids_of(s, a)[i], kids_of(s, b)[i], depth + 1))
                return 0;
        return 1;
    default:
        return 0;
    }
}

static uint64_t seq_hash(const Scan *s, uint32_t id) {
    const uint32_t *k = kids_of(s, id);
    uint64_t h = mix(0x5eed, s->nodes[id].n);
    for (uint32_t i = 0; i < s->nodes[id].n; i++)
        h = mix(h, k[i]);
    return h;
}

static int same_seq(const Scan *s, uint32_t a, uint32_t b) {
    uint32_t n = s->nodes[a].n;
    return a == b || (n == s->nodes[b].n && memcmp(kids_of(s, a), kids_of(s, b), n * sizeof(uint32_t)) == 0);
}

/* Open-addressing table from a value's hash to its group. */
typedef struct {
    uint64_t *hash;
    uint32_t *rep; /* node id + 1 of the group's first value; 0 = free slot */
    int32_t *code;
    size_t cap, count;
    uint32_t *reps;     /* representatives in code order */
    uint32_t *seen;     /* node id + 1 of each node already grouped; 0 = free slot */
    int32_t *seen_code; /* memoized values repeat: each node is hashed once */
} Groups;

static void groups_free(Groups *g) {
    free(g->hash);
    free(g->rep);
    free(g->code);
    free(g->reps);
    free(g->seen);
    free(g->seen_code);
    memset(g, 0, sizeof(*g));
}

static int groups_init(Scan *s, Groups *g, size_t expect) {
    memset(g, 0, sizeof(*g));
    size_t cap = 16;
    while (cap < expect * 2)
        cap *= 2;
    g->hash = calloc(cap, sizeof(uint64_t));
    g->rep = calloc(cap, sizeof(uint32_t));
    g->code = calloc(cap, sizeof(int32_t));
    g->reps = malloc(cap / 2 * sizeof(uint32_t) + 4);
    g->seen = calloc(cap, sizeof(uint32_t));
    g->seen_code = calloc(cap, sizeof(int32_t));
    g->cap = cap;
    if (!g->hash || !g->rep || !g->code || !g->reps || !g->seen || !g->seen_code) {
        groups_free(g);
        return -1;
    }
    (void)s;
    return 0;
}

/* The group code of node ``id`` (new groups take the next code); -1 on failure. */
static int32_t content_group(Scan *s, Groups *g, uint32_t id, int by_sequence) {
    uint64_t h = by_sequence ? seq_hash(s, id) : content_hash(s, id, 0);
    if (s->budget <= 0)
        return -1;
    size_t mask = g->cap - 1, i = (size_t)h & mask;
    while (g->rep[i]) {
        uint32_t r = g->rep[i] - 1;
        if (g->hash[i] == h && (by_sequence ? same_seq(s, r, id) : same_content(s, r, id, 0)))
            return g->code[i];
        i = (i + 1) & mask;
    }
    if (s->budget <= 0 || g->count + 1 > g->cap / 2)
        return -1; /* out of steps; or more groups than entries, which cannot happen */
    g->hash[i] = h;
    g->rep[i] = id + 1;
    g->code[i] = (int32_t)g->count;
    g->reps[g->count] = id;
    return (int32_t)g->count++;
}

static int32_t group_of(Scan *s, Groups *g, uint32_t id, int by_sequence) {
    size_t mask = g->cap - 1, i = (size_t)mix(0, id) & mask;
    while (g->seen[i]) {
        if (g->seen[i] == id + 1)
            return g->seen_code[i];
        i = (i + 1) & mask;
    }
    int32_t code = content_group(s, g, id, by_sequence);
    g->seen[i] = id + 1; /* at most one node per entry: the table stays half empty */
    g->seen_code[i] = code;
    return code;
}

/* ---- building Python objects for the few values that need them ------------------ */

typedef struct {
    Scan *s;
    PyObject **made; /* node id -> object (owned) */
    uint8_t *busy;   /* tuples being built: a cycle through one is left to the full path */
} Py;

#define MAX_DEPTH 200

static PyObject *to_py(Py *py, uint32_t id, int depth) {
    if (py->made[id]) {
        Py_INCREF(py->made[id]);
        return py->made[id];
    }
    if (depth > MAX_DEPTH || py->busy[id])
        return NULL;
    const Scan *s = py->s;
    const Node *nd = &s->nodes[id];
    PyObject *o = NULL;
    switch (nd->tag) {
    case T_NONE:
        o = Py_NewRef(Py_None);
        break;
    case T_TRUE:
        o = Py_NewRef(Py_True);
        break;
    case T_FALSE:
        o = Py_NewRef(Py_False);
        break;
    case T_INT:
        o = PyLong_FromLongLong(nd->v);
        break;
    case T_FLOAT: {
        double d;
        uint64_t bits = (uint64_t)nd->v;
        memcpy(&d, &bits, sizeof d);
        o = PyFloat_FromDouble(d);
        break;
    }
    case T_STR:
        o = PyUnicode_DecodeUTF8((const char *)s->data + nd->v, nd->n, "surrogatepass");
        break;
    case T_LIST: {
        uint32_t n = nd->n;
        o = PyList_New(n);
        if (!o)
            break;
        for (uint32_t i = 0; i < n; i++)
            PyList_SET_ITEM(o, i, Py_NewRef(Py_None));
        py->made[id] = Py_NewRef(o); /* before the children: a list may hold itself */
        for (uint32_t i = 0; i < n; i++) {
            PyObject *c = to_py(py, kids_of(s, id)[i], depth + 1);
            if (!c) {
                Py_DECREF(o);
                return NULL;
            }
            PyList_SetItem(o, i, c);
        }
        return o;
    }
    case T_TUPLE: {
        uint32_t n = nd->n;
        py->busy[id] = 1;
        o = PyTuple_New(n);
        for (uint32_t i = 0; o && i < n; i++) {
            PyObject *c = to_py(py, kids_of(s, id)[i], depth + 1);
            if (!c)
                Py_CLEAR(o);
            else
                PyTuple_SET_ITEM(o, i, c);
        }
        py->busy[id] = 0;
        break;
    }
    case T_DICT: {
        o = PyDict_New();
        if (!o)
            break;
        py->made[id] = Py_NewRef(o);
        for (uint32_t i = 0; i < nd->n; i += 2) {
            PyObject *k = to_py(py, kids_of(s, id)[i], depth + 1);
            PyObject *v = k ? to_py(py, kids_of(s, id)[i + 1], depth + 1) : NULL;
            int bad = !v || PyDict_SetItem(o, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad) {
                Py_DECREF(o);
                return NULL;
            }
        }
        return o;
    }
    }
    if (o)
        py->made[id] = Py_NewRef(o);
    return o;
}

/* ---- the entries, column by column ---------------------------------------------- */

enum { K_INT, K_GROUP, K_STACK };

typedef struct {
    const char *name;
    Py_ssize_t len;
    int kind;
    PyObject *key; /* the Python str */
} Field;

static PyObject *reps_list(Py *py, const Groups *g) {
    PyObject *out = PyList_New((Py_ssize_t)g->count);
    if (!out)
        return NULL;
    for (size_t i = 0; i < g->count; i++) {
        PyObject *o = to_py(py, g->reps[i], 0);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, o);
    }
    return out;
}

/* Fill ``result`` (a dict: key -> column data) from the entries list; -1 to give up. */
static int columns(Scan *s, Py *py, uint32_t list, Field *fields, int nf, PyObject *result) {
    uint32_t n = s->nodes[list].n;
    const uint32_t *ents = kids_of(s, list);
    int8_t *slot = calloc(s->nnodes, 1); /* key node -> field index + 2; 1 = not a field */
    uint32_t *found = malloc(sizeof(uint32_t) * (size_t)nf * ((size_t)n + 1));
    Groups *groups = calloc((size_t)nf, sizeof(Groups));
    int rc = -1;
    if (!slot || !found || !groups)
        goto done;
    for (int f = 0; f < nf; f++)
        if (fields[f].kind != K_INT && groups_init(s, &groups[f], n))
            goto done;
    memset(found, 0xff, sizeof(uint32_t) * (size_t)nf * n); /* UINT32_MAX: absent */
    for (uint32_t e = 0; e < n; e++) {
        uint32_t d = ents[e];
        if (s->nodes[d].tag != T_DICT)
            goto done;
        const uint32_t *kv = kids_of(s, d);
        for (uint32_t i = 0; i < s->nodes[d].n; i += 2) {
            uint32_t k = kv[i];
            if (!slot[k]) {
                slot[k] = 1;
                for (int f = 0; f < nf; f++)
                    if (str_is(s, k, fields[f].name, (size_t)fields[f].len)) {
                        slot[k] = (int8_t)(f + 2);
                        break;
                    }
            }
            if (slot[k] > 1)
                found[(size_t)(slot[k] - 2) * n + e] = kv[i + 1]; /* a repeated key: last wins */
        }
    }
    for (int f = 0; f < nf; f++) {
        const uint32_t *col = found + (size_t)f * n;
        PyObject *a = NULL, *b = NULL, *item = NULL;
        if (fields[f].kind == K_INT) {
            a = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n * 8);
            b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
            if (!a || !b)
                goto column_failed;
            int64_t *vals = (int64_t *)PyBytes_AS_STRING(a);
            uint8_t *state = (uint8_t *)PyBytes_AS_STRING(b); /* 0 absent, 1 int, 2 None */
            for (uint32_t e = 0; e < n; e++) {
                vals[e] = 0;
                state[e] = 0;
                if (col[e] == UINT32_MAX)
                    continue;
                const Node *v = &s->nodes[col[e]];
                if (v->tag == T_INT) {
                    vals[e] = v->v;
                    state[e] = 1;
                } else if (v->tag == T_NONE) {
                    state[e] = 2;
                } else {
                    goto column_failed; /* a bool, text or float: the full path says what */
                }
            }
        } else {
            int by_seq = fields[f].kind == K_STACK;
            a = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n * 4);
            if (!a)
                goto column_failed;
            int32_t *codes = (int32_t *)PyBytes_AS_STRING(a);
            for (uint32_t e = 0; e < n; e++) {
                uint32_t v = col[e];
                if (v == UINT32_MAX || (by_seq && s->nodes[v].tag == T_NONE)) {
                    codes[e] = -1;
                    continue;
                }
                if (by_seq && s->nodes[v].tag != T_LIST)
                    goto column_failed;
                codes[e] = group_of(s, &groups[f], v, by_seq);
                if (codes[e] < 0)
                    goto column_failed;
            }
            b = reps_list(py, &groups[f]);
            if (!b)
                goto column_failed;
        }
        item = PyTuple_Pack(2, a, b);
        if (!item || PyDict_SetItem(result, fields[f].key, item) < 0)
            goto column_failed;
        Py_DECREF(item);
        Py_DECREF(a);
        Py_DECREF(b);
        continue;
    column_failed:
        Py_XDECREF(item);
        Py_XDECREF(a);
        Py_XDECREF(b);
        goto done;
    }
    rc = 0;
done:
    if (groups)
        for (int f = 0; f < nf; f++)
            groups_free(&groups[f]);
    free(groups);
    free(found);
    free(slot);
    return rc;
}

/* Work arrays kept from one scan to the next: a worker scans thousands of files of
 * about the same size, and fresh arrays each time cost more in page faults than the
 * scan itself. Arrays above KEEP_BYTES are freed rather than kept. */
static Scan kept;
static PyObject **kept_made;
static uint8_t *kept_busy;
static size_t kept_made_cap;
#define KEEP_BYTES ((size_t)128 << 20)

static void scan_start(Scan *s) {
    s->nodes = kept.nodes, s->capnodes = kept.capnodes;
    s->kids = kept.kids, s->capkids = kept.capkids;
    s->stack = kept.stack, s->capstack = kept.capstack;
    s->marks = kept.marks, s->capmarks = kept.capmarks;
    s->memo = kept.memo, s->capmemo = kept.capmemo;
    s->bytes = kept.bytes;
    memset(&kept, 0, sizeof kept);
}

static void scan_end(Scan *s) {
    if (s->memo_end)
        memset(s->memo, 0, s->memo_end * sizeof(uint32_t)); /* kept slots must start empty */
    if (s->bytes > KEEP_BYTES) {
        free(s->nodes);
        free(s->kids);
        free(s->stack);
        free(s->marks);
        free(s->memo);
        return;
    }
    kept.nodes = s->nodes, kept.capnodes = s->capnodes;
    kept.kids = s->kids, kept.capkids = s->capkids;
    kept.stack = s->stack, kept.capstack = s->capstack;
    kept.marks = s->marks, kept.capmarks = s->capmarks;
    kept.memo = s->memo, kept.capmemo = s->capmemo;
    kept.bytes = s->bytes;
}

/* Per-node Python objects and flags, all NULL/0 between scans. */
static int py_start(Py *py, size_t nnodes) {
    if (nnodes > kept_made_cap) {
        free(kept_made);
        free(kept_busy);
        kept_made_cap = 0;
        kept_made = calloc(nnodes, sizeof(PyObject *));
        kept_busy = calloc(nnodes, 1);
        if (!kept_made || !kept_busy)
            return -1;
        kept_made_cap = nnodes;
    }
    py->made = kept_made;
    py->busy = kept_busy;
    return 0;
}

static void py_end(Py *py, size_t nnodes) {
    if (!py->made)
        return;
    for (size_t i = 0; i < nnodes; i++)
        Py_CLEAR(py->made[i]);
    if (kept_made_cap * sizeof(PyObject *) > KEEP_BYTES) {
        free(kept_made);
        free(kept_busy);
        kept_made = NULL;
        kept_busy = NULL;
        kept_made_cap = 0;
    }
}

/* The dump with every key but "entries" as Python objects, into ``top``. */
static int top_level(Scan *s, Py *py, uint32_t root, PyObject *top, int64_t *entries) {
    const uint32_t *kv = kids_of(s, root);
    *entries = -1;
    for (uint32_t i = 0; i < s->nodes[root].n; i += 2) {
        if (str_is(s, kv[i], "entries", 7)) {
            *entries = kv[i + 1];
            continue;
        }
        PyObject *k = to_py(py, kv[i], 0);
        PyObject *v = k ? to_py(py, kv[i + 1], 0) : NULL;
        int bad = !v || PyDict_SetItem(top, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad)
            return -1;
    }
    return 0;
}

PyDoc_STRVAR(scan_doc,
             "scan(data, fields, max_entries) -> None | (top, has_entries, n, columns)\n\n"
             "``fields`` is a tuple of (key, kind) with kind 'int', 'group' or 'stack'.\n"
             "None means: take the full path (the scanner does not judge the dump).");

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *spec;
    Py_ssize_t max_entries;
    if (!PyArg_ParseTuple(args, "y*O!n", &buf, &PyTuple_Type, &spec, &max_entries))
        return NULL;
    int nf = (int)PyTuple_GET_SIZE(spec);
    Field fields[32];
    if (nf > 32) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "at most 32 fields");
        return NULL;
    }
    for (int f = 0; f < nf; f++) {
        PyObject *pair = PyTuple_GET_ITEM(spec, f);
        const char *kind;
        if (!PyArg_ParseTuple(pair, "Us", &fields[f].key, &kind)) {
            PyBuffer_Release(&buf);
            return NULL;
        }
        fields[f].name = PyUnicode_AsUTF8AndSize(fields[f].key, &fields[f].len);
        fields[f].kind = strcmp(kind, "int") == 0 ? K_INT : strcmp(kind, "stack") == 0 ? K_STACK : K_GROUP;
        if (!fields[f].name) {
            PyBuffer_Release(&buf);
            return NULL;
        }
    }
    Scan s;
    memset(&s, 0, sizeof s);
    s.data = buf.buf;
    s.size = (size_t)buf.len;
    s.max_bytes = (size_t)64 * s.size + (KEEP_BYTES * 2);
    s.budget = (int64_t)(16 * s.size) + (1 << 20);
    scan_start(&s);
    PyObject *out = NULL, *top = NULL, *cols = NULL;
    Py py = {&s, NULL, NULL};
    int64_t root = run(&s);
    if (root < 0 || s.nodes[root].tag != T_DICT)
        goto fallback;
    top = PyDict_New();
    cols = PyDict_New();
    if (py_start(&py, s.nnodes) < 0 || !top || !cols)
        goto fallback;
    int64_t entries;
    if (top_level(&s, &py, (uint32_t)root, top, &entries) < 0)
        goto fallback;
    uint32_t n = 0;
    if (entries >= 0) {
        if (s.nodes[entries].tag != T_LIST || s.nodes[entries].n > (uint64_t)max_entries)
            goto fallback;
        n = s.nodes[entries].n;
        if (columns(&s, &py, (uint32_t)entries, fields, nf, cols) < 0)
            goto fallback;
    }
    out = Py_BuildValue("(OOIO)", top, entries >= 0 ? Py_True : Py_False, n, cols);
    goto done;
fallback:
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto done; /* KeyboardInterrupt and the like go on up */
        PyErr_Clear();
    }
    out = Py_NewRef(Py_None);
done:
    py_end(&py, s.nnodes);
    Py_XDECREF(top);
    Py_XDECREF(cols);
    scan_end(&s);
    PyBuffer_Release(&buf);
    return out;
}

static PyMethodDef methods[] = {{"scan", scan, METH_VARARGS, scan_doc}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frscan", "Fast path for Flight Recorder pickles.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__frscan(void) { return PyModule_Create(&module); }
