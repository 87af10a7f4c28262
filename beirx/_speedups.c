/* beirx._speedups: compiled hot paths, each the exact twin of a pure-Python function.
 *
 * Built by setuptools as an OPTIONAL extension (see setup.py); beirx/speedups.py imports it and falls
 * back to the Python code when it is absent, so output never depends on whether a compiler was there.
 *
 * - porter: Lucene's PorterStemmer (the C reference implementation of M.F. Porter, 1980, with Lucene's
 *   departures), a line-by-line port of beirx/language_packs/porter.py;
 * - stempel: Stempel's MultiTrie2 walk + patch application (Galambos 2001; Lucene's stempel module,
 *   pystempel's egothor.py), over the stemmer_20000.tbl table parsed from its Java DataOutput bytes;
 * - analyze_tokens: LanguagePack's token -> term chain (elision, possessive, stop words, stemmer) with
 *   a token -> term memo, for a whole token list per call;
 * - count_terms: one document's term frequencies as (term id, tf) int32 pairs for the BM25 index;
 * - trec_lines: TREC run lines of one query with repr() floats, in evaluation order.
 *
 * Both stemmers work on UTF-16 code units, as Lucene's do on a Java char[]: a word with a
 * supplementary character is converted to units first and the result back, an unpaired surrogate
 * becoming U+FFFD (Python's utf-16 "replace").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

typedef Py_UCS4 ch_t;

/* ------------------------------------------------------------------------------------------ */
/* UTF-16 units in and out                                                                     */

typedef struct {
    ch_t *b;
    Py_ssize_t n;
    Py_ssize_t cap;
    ch_t stack[320];
} Buf;

static int buf_init(Buf *buf, Py_ssize_t cap) {
    buf->n = 0;
    if (cap <= (Py_ssize_t)(sizeof(buf->stack) / sizeof(ch_t))) {
        buf->b = buf->stack;
        buf->cap = sizeof(buf->stack) / sizeof(ch_t);
        return 0;
    }
    buf->b = PyMem_Malloc(cap * sizeof(ch_t));
    if (!buf->b) { PyErr_NoMemory(); return -1; }
    buf->cap = cap;
    return 0;
}

static void buf_free(Buf *buf) {
    if (buf->b != buf->stack) PyMem_Free(buf->b);
}

/* Load a str as UTF-16 code units (each unit one ch_t), with `extra` spare capacity. Sets *wide
 * when the word had a supplementary character. */
static int load_units(PyObject *word, Buf *buf, Py_ssize_t extra, int *wide) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    int kind = PyUnicode_KIND(word);
    const void *data = PyUnicode_DATA(word);
    Py_ssize_t units = n;
    *wide = 0;
    if (kind == PyUnicode_4BYTE_KIND) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (PyUnicode_READ(kind, data, i) > 0xFFFF) units++;
        *wide = units != n;
    }
    if (buf_init(buf, units + extra) < 0) return -1;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        ch_t c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            buf->b[j++] = 0xD800 + (c >> 10);
            buf->b[j++] = 0xDC00 + (c & 0x3FF);
        } else {
            buf->b[j++] = c;
        }
    }
    buf->n = j;
    return 0;
}

/* Units back to str: surrogate pairs joined, unpaired surrogates -> U+FFFD (utf-16 "replace"). */
static PyObject *units_to_str(const ch_t *b, Py_ssize_t n, int wide) {
    if (!wide) return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, b, n);
    ch_t *out = PyMem_Malloc((n + 1) * sizeof(ch_t));
    if (!out) return PyErr_NoMemory();
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        ch_t c = b[i];
        if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && b[i + 1] >= 0xDC00 && b[i + 1] <= 0xDFFF) {
            out[j++] = 0x10000 + ((c - 0xD800) << 10) + (b[i + 1] - 0xDC00);
            i++;
        } else if (c >= 0xD800 && c <= 0xDFFF) {
            out[j++] = 0xFFFD;
        } else {
            out[j++] = c;
        }
    }
    PyObject *s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, j);
    PyMem_Free(out);
    return s;
}

/* ------------------------------------------------------------------------------------------ */
/* Porter (Lucene's PorterStemmer)                                                              */

typedef struct {
    ch_t *b;
    Py_ssize_t k, j;
} PW;

static int p_cons(const PW *w, Py_ssize_t i) {
    switch (w->b[i]) {
    case 'a': case 'e': case 'i': case 'o': case 'u': return 0;
    case 'y': return i == 0 ? 1 : !p_cons(w, i - 1);
    default: return 1;
    }
}

static int p_m(const PW *w) {
    Py_ssize_t n = 0, i = 0, j = w->j;
    for (;;) {
        if (i > j) return (int)n;
        if (!p_cons(w, i)) break;
        i++;
    }
    i++;
    for (;;) {
        for (;;) {
            if (i > j) return (int)n;
            if (p_cons(w, i)) break;
            i++;
        }
        i++;
        n++;
        for (;;) {
            if (i > j) return (int)n;
            if (!p_cons(w, i)) break;
            i++;
        }
        i++;
    }
}

static int p_vowel_in_stem(const PW *w) {
    for (Py_ssize_t i = 0; i <= w->j; i++)
        if (!p_cons(w, i)) return 1;
    return 0;
}

static int p_double_c(const PW *w, Py_ssize_t i) {
    return i >= 1 && w->b[i] == w->b[i - 1] && p_cons(w, i);
}

static int p_cvc(const PW *w, Py_ssize_t i) {
    if (i < 2 || !p_cons(w, i) || p_cons(w, i - 1) || !p_cons(w, i - 2)) return 0;
    ch_t c = w->b[i];
    return !(c == 'w' || c == 'x' || c == 'y');
}

static int p_ends(PW *w, const char *s) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    Py_ssize_t start = w->k - len + 1;
    if (start < 0) return 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if (w->b[start + i] != (ch_t)(unsigned char)s[i]) return 0;
    w->j = w->k - len;
    return 1;
}

static void p_set_to(PW *w, const char *s) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    for (Py_ssize_t i = 0; i < len; i++) w->b[w->j + 1 + i] = (ch_t)(unsigned char)s[i];
    w->k = w->j + len;
}

static void p_r(PW *w, const char *s) {
    if (p_m(w) > 0) p_set_to(w, s);
}

static int p_in(ch_t c, const char *set) {
    for (; *set; set++)
        if (c == (ch_t)(unsigned char)*set) return 1;
    return 0;
}

static void p_step1(PW *w) {
    if (w->b[w->k] == 's') {
        if (p_ends(w, "sses")) w->k -= 2;
        else if (p_ends(w, "ies")) p_set_to(w, "i");
        else if (w->b[w->k - 1] != 's') w->k -= 1;
    }
    if (p_ends(w, "eed")) {
        if (p_m(w) > 0) w->k -= 1;
    } else if ((p_ends(w, "ed") || p_ends(w, "ing")) && p_vowel_in_stem(w)) {
        w->k = w->j;
        if (p_ends(w, "at")) p_set_to(w, "ate");
        else if (p_ends(w, "bl")) p_set_to(w, "ble");
        else if (p_ends(w, "iz")) p_set_to(w, "ize");
        else if (p_double_c(w, w->k)) {
            if (!p_in(w->b[w->k], "lsz")) w->k -= 1;
        } else {
            w->j = w->k;
            if (p_m(w) == 1 && p_cvc(w, w->k)) p_set_to(w, "e");
        }
    }
}

static void p_step2(PW *w) {
    if (p_ends(w, "y") && p_vowel_in_stem(w)) w->b[w->k] = 'i';
}

/* (suffix, replacement) pairs by the key character; first matching suffix wins (see porter.py). */
static const char *const STEP3[][2] = {
    {"a", NULL}, {"ational", "ate"}, {"tional", "tion"},
    {"c", NULL}, {"enci", "ence"}, {"anci", "ance"},
    {"e", NULL}, {"izer", "ize"},
    {"l", NULL}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
    {"o", NULL}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
    {"s", NULL}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
    {"t", NULL}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
    {"g", NULL}, {"logi", "log"},
    {NULL, NULL},
};
static const char *const STEP4[][2] = {
    {"e", NULL}, {"icate", "ic"}, {"ative", ""}, {"alize", "al"},
    {"i", NULL}, {"iciti", "ic"},
    {"l", NULL}, {"ical", "ic"}, {"ful", ""},
    {"s", NULL}, {"ness", ""},
    {NULL, NULL},
};
static const char *const STEP5[][2] = {
    {"a", NULL}, {"al", ""},
    {"c", NULL}, {"ance", ""}, {"ence", ""},
    {"e", NULL}, {"er", ""},
    {"i", NULL}, {"ic", ""},
    {"l", NULL}, {"able", ""}, {"ible", ""},
    {"n", NULL}, {"ant", ""}, {"ement", ""}, {"ment", ""}, {"ent", ""},
    {"s", NULL}, {"ism", ""},
    {"t", NULL}, {"ate", ""}, {"iti", ""},
    {"u", NULL}, {"ous", ""},
    {"v", NULL}, {"ive", ""},
    {"z", NULL}, {"ize", ""},
    {NULL, NULL},
};

/* Index of the first suffix entry under key `c`, or -1. */
static int p_group(const char *const table[][2], ch_t c) {
    for (int i = 0; table[i][0]; i++)
        if (table[i][1] == NULL && (ch_t)(unsigned char)table[i][0][0] == c) return i + 1;
    return -1;
}

static void p_replace_first(PW *w, const char *const table[][2], ch_t key) {
    int i = p_group(table, key);
    if (i < 0) return;
    for (; table[i][0] && table[i][1] != NULL; i++) {
        if (p_ends(w, table[i][0])) {
            p_r(w, table[i][1]);
            return;
        }
    }
}

static void p_step5(PW *w) {
    if (w->k == 0) return;
    ch_t key = w->b[w->k - 1];
    if (key == 'o') {
        if (!((p_ends(w, "ion") && w->j >= 0 && p_in(w->b[w->j], "st")) || p_ends(w, "ou"))) return;
    } else {
        int i = p_group(STEP5, key), hit = 0;
        if (i < 0) return;
        for (; STEP5[i][0] && STEP5[i][1] != NULL; i++)
            if (p_ends(w, STEP5[i][0])) { hit = 1; break; }
        if (!hit) return;
    }
    if (p_m(w) > 1) w->k = w->j;
}

static void p_step6(PW *w) {
    w->j = w->k;
    if (w->b[w->k] == 'e') {
        int a = p_m(w);
        if (a > 1 || (a == 1 && !p_cvc(w, w->k - 1))) w->k -= 1;
    }
    if (w->b[w->k] == 'l' && p_double_c(w, w->k) && p_m(w) > 1) w->k -= 1;
}

/* Stem b[0..n) in place (needs n + 4 capacity); returns the new length. */
static Py_ssize_t porter_units(ch_t *b, Py_ssize_t n) {
    if (n <= 2) return n;
    PW w = {b, n - 1, 0};
    p_step1(&w);
    p_step2(&w);
    if (w.k > 0) p_replace_first(&w, STEP3, w.b[w.k - 1]);
    p_replace_first(&w, STEP4, w.b[w.k]);
    p_step5(&w);
    p_step6(&w);
    return w.k + 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Stempel (MultiTrie2 of Tries, egothor)                                                       */

typedef struct {
    int forward, root, nrows, ncmds;
    int *row_start, *row_len; /* into the cell arrays, cells sorted by character */
    int *cmd_start, *cmd_len; /* into cmd_chars */
} Trie;

typedef struct {
    int forward, ntries;
    Trie *tries;
    ch_t *cell_ch;
    int *cell_cmd, *cell_ref;
    ch_t *cmd_chars;
    void *blocks[16];
    int nblocks;
} Table;

typedef struct {
    const unsigned char *p, *end;
    int bad;
} Reader;

static int rd_int(Reader *r) {
    if (r->end - r->p < 4) { r->bad = 1; return 0; }
    unsigned int v = ((unsigned)r->p[0] << 24) | ((unsigned)r->p[1] << 16) | ((unsigned)r->p[2] << 8) | r->p[3];
    r->p += 4;
    return (int)v;
}

static int rd_u16(Reader *r) {
    if (r->end - r->p < 2) { r->bad = 1; return 0; }
    int v = (r->p[0] << 8) | r->p[1];
    r->p += 2;
    return v;
}

static int rd_bool(Reader *r) {
    if (r->end - r->p < 1) { r->bad = 1; return 0; }
    return *r->p++ != 0;
}

static void table_free(Table *t) {
    for (int i = 0; i < t->nblocks; i++) PyMem_Free(t->blocks[i]);
    PyMem_Free(t->tries);
    PyMem_Free(t);
}

static void *table_alloc(Table *t, size_t size) {
    if (t->nblocks >= 16) return NULL;
    void *p = PyMem_Calloc(1, size ? size : 1);
    if (p) t->blocks[t->nblocks++] = p;
    return p;
}

static int cmp_cell(const void *a, const void *b) {
    const ch_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Parse Stempel's table bytes: UTF method, then MultiTrie (bool forward, int BY, int n, n Tries),
 * each Trie: bool forward, int root, int ncmds, ncmds UTF strings, int nrows, rows of
 * (int ncells, ncells x (char, int cmd, int cnt, int ref, int skip)). Java DataOutput, big-endian. */
static Table *table_parse(const unsigned char *data, Py_ssize_t size) {
    Reader r = {data, data + size, 0};
    /* First pass: sizes. */
    Reader s = r;
    int mlen = rd_u16(&s);
    if (s.bad || s.end - s.p < mlen) goto bad_format;
    int multi = 0;
    for (int i = 0; i < mlen; i++)
        if (s.p[i] == 'M' || s.p[i] == 'm') multi = 1;
    if (!multi) goto bad_format;
    s.p += mlen;
    rd_bool(&s);
    rd_int(&s);
    int ntries = rd_int(&s);
    if (s.bad || ntries <= 0 || ntries > 64) goto bad_format;
    long total_rows = 0, total_cells = 0, total_cmds = 0, total_chars = 0;
    for (int t = 0; t < ntries; t++) {
        rd_bool(&s);
        rd_int(&s);
        int ncmds = rd_int(&s);
        if (s.bad || ncmds < 0) goto bad_format;
        for (int c = 0; c < ncmds; c++) {
            int len = rd_u16(&s);
            if (s.bad || s.end - s.p < len) goto bad_format;
            s.p += len;
            total_chars += len;
        }
        total_cmds += ncmds;
        int nrows = rd_int(&s);
        if (s.bad || nrows <= 0) goto bad_format;
        total_rows += nrows;
        for (int row = 0; row < nrows; row++) {
            int ncells = rd_int(&s);
            if (s.bad || ncells < 0 || s.end - s.p < (Py_ssize_t)ncells * 18) goto bad_format;
            s.p += (Py_ssize_t)ncells * 18;
            total_cells += ncells;
        }
    }
    Table *tab = PyMem_Calloc(1, sizeof(Table));
    if (!tab) { PyErr_NoMemory(); return NULL; }
    tab->tries = PyMem_Calloc(ntries, sizeof(Trie));
    tab->ntries = ntries;
    tab->cell_ch = table_alloc(tab, total_cells * sizeof(ch_t) * 3); /* ch, cmd, ref interleaved below */
    int *rows = table_alloc(tab, (total_rows * 2 + total_cmds * 2) * sizeof(int));
    tab->cmd_chars = table_alloc(tab, (total_chars + 1) * sizeof(ch_t));
    if (!tab->tries || !tab->cell_ch || !rows || !tab->cmd_chars) { table_free(tab); PyErr_NoMemory(); return NULL; }
    tab->cell_cmd = (int *)(tab->cell_ch + total_cells);
    tab->cell_ref = (int *)(tab->cell_ch + 2 * total_cells);

    /* Second pass: fill. */
    r.p += 2 + mlen;
    tab->forward = rd_bool(&r);
    rd_int(&r);
    rd_int(&r);
    long cell = 0, chars = 0;
    for (int t = 0; t < ntries; t++) {
        Trie *tr = &tab->tries[t];
        tr->forward = rd_bool(&r);
        tr->root = rd_int(&r);
        tr->ncmds = rd_int(&r);
        tr->cmd_start = rows;
        tr->cmd_len = rows + tr->ncmds;
        rows += 2 * tr->ncmds;
        for (int c = 0; c < tr->ncmds; c++) {
            int len = rd_u16(&r);
            PyObject *str = PyUnicode_DecodeUTF8((const char *)r.p, len, "strict");
            if (!str) { table_free(tab); return NULL; }
            r.p += len;
            Py_ssize_t n = PyUnicode_GET_LENGTH(str);
            tr->cmd_start[c] = (int)chars;
            tr->cmd_len[c] = (int)n;
            for (Py_ssize_t i = 0; i < n; i++) tab->cmd_chars[chars++] = PyUnicode_READ_CHAR(str, i);
            Py_DECREF(str);
        }
        tr->nrows = rd_int(&r);
        tr->row_start = rows;
        tr->row_len = rows + tr->nrows;
        rows += 2 * tr->nrows;
        for (int row = 0; row < tr->nrows; row++) {
            int ncells = rd_int(&r);
            tr->row_start[row] = (int)cell;
            tr->row_len[row] = ncells;
            /* sort (ch, cmd, ref) triples by ch: pack them temporarily */
            ch_t (*trip)[3] = PyMem_Malloc((ncells ? ncells : 1) * sizeof(ch_t[3]));
            if (!trip) { table_free(tab); PyErr_NoMemory(); return NULL; }
            for (int c = 0; c < ncells; c++) {
                trip[c][0] = (ch_t)rd_u16(&r);
                trip[c][1] = (ch_t)rd_int(&r);
                rd_int(&r); /* cnt */
                trip[c][2] = (ch_t)rd_int(&r);
                rd_int(&r); /* skip: unused by get_last_on_path */
            }
            qsort(trip, ncells, sizeof(ch_t[3]), cmp_cell);
            for (int c = 0; c < ncells; c++) {
                if ((c > 0 && trip[c][0] == trip[c - 1][0]) || (int)trip[c][1] >= tr->ncmds || (int)trip[c][2] >= tr->nrows) {
                    PyMem_Free(trip);
                    table_free(tab);
                    goto bad_format;
                }
                tab->cell_ch[cell + c] = trip[c][0];
                tab->cell_cmd[cell + c] = (int)trip[c][1];
                tab->cell_ref[cell + c] = (int)trip[c][2];
            }
            PyMem_Free(trip);
            cell += ncells;
        }
        if (tr->root < 0 || tr->root >= tr->nrows) { table_free(tab); goto bad_format; }
    }
    if (r.bad) { table_free(tab); goto bad_format; }
    return tab;
bad_format:
    PyErr_SetString(PyExc_ValueError, "not a Stempel MultiTrie2 table");
    return NULL;
}

/* Cell index of `c` in row `row` of trie `tr`, or -1. */
static long t_cell(const Table *tab, const Trie *tr, int row, ch_t c) {
    long lo = tr->row_start[row], hi = lo + tr->row_len[row] - 1;
    while (lo <= hi) {
        long mid = (lo + hi) >> 1;
        ch_t m = tab->cell_ch[mid];
        if (m == c) return mid;
        if (m < c) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

/* Trie.get_last_on_path over key = units[off .. off+len): the command index, -1 for None, -2 on error. */
static int t_last_on_path(const Table *tab, const Trie *tr, const ch_t *units, Py_ssize_t off, Py_ssize_t len) {
    if (len <= 0) return -2; /* key[-1] of an empty key: IndexError */
    int last = -1, now = tr->root;
    for (Py_ssize_t i = 0; i < len - 1; i++) {
        ch_t c = tr->forward ? units[off + i] : units[off + len - 1 - i];
        long cell = t_cell(tab, tr, now, c);
        if (cell >= 0 && tab->cell_cmd[cell] >= 0) last = tab->cell_cmd[cell];
        if (cell >= 0 && tab->cell_ref[cell] >= 0) now = tab->cell_ref[cell];
        else return last;
    }
    ch_t c = tr->forward ? units[off + len - 1] : units[off];
    long cell = t_cell(tab, tr, now, c);
    return (cell >= 0 && tab->cell_cmd[cell] >= 0) ? tab->cell_cmd[cell] : last;
}

/* MultiTrie2.__length_pp; -1 << 30 on error (IndexError). */
static long length_pp(const ch_t *cmd, int n) {
    long length = 0;
    for (int i = 0; i < n; i += 2) {
        if (cmd[i] == '-' || cmd[i] == 'D') {
            if (i + 1 >= n) return -(1L << 30);
            length += (long)cmd[i + 1] - 'a' + 1;
        } else if (cmd[i] == 'R') {
            length += 1;
        }
    }
    return length;
}

/* MultiTrie2.__skip on key (off, len): 0 ok, 1 for None. Python slicing semantics. */
static int mt_skip(int forward, Py_ssize_t *off, Py_ssize_t *len, long count) {
    if (forward) {
        Py_ssize_t start = count >= 0 ? (count < *len ? count : *len) : (*len + count > 0 ? *len + count : 0);
        *off += start;
        *len -= start;
        return 0;
    }
    if (*len < count) return 1;
    Py_ssize_t end = *len - count;
    if (end > *len) end = *len;
    *len = end;
    return 0;
}

#define MAX_PATCH 512

/* MultiTrie2.get_last_on_path: fills patch, returns its length, -1 on error (the word is kept). */
static Py_ssize_t mt_last_on_path(const Table *tab, const ch_t *units, Py_ssize_t n, ch_t *patch) {
    Py_ssize_t plen = 0;
    Py_ssize_t key_off = 0, key_len = n, last_off = 0, last_len = n;
    const ch_t *prev = NULL;
    int prev_len = 0;
    ch_t last_ch = ' ';
    for (int i = 0; i < tab->ntries; i++) {
        const Trie *tr = &tab->tries[i];
        int w = t_last_on_path(tab, tr, units, last_off, last_len);
        if (w == -2) return -1;
        if (w < 0) return plen;
        const ch_t *r = tab->cmd_chars + tr->cmd_start[w];
        int rlen = tr->cmd_len[w];
        if (rlen == 1 && r[0] == '*') return plen;
        if (rlen == 0) return -1; /* r[0]: IndexError */
        if ((last_ch == '-' || last_ch == 'D') && last_ch == r[0]) return plen;
        if (rlen < 2) return -1; /* r[-2]: IndexError */
        last_ch = r[rlen - 2];
        if (r[0] == '-') {
            if (i > 0) {
                long c = length_pp(prev, prev_len);
                if (c == -(1L << 30)) return -1;
                if (mt_skip(tab->forward, &key_off, &key_len, c)) return plen;
            }
            long c = length_pp(r, rlen);
            if (c == -(1L << 30)) return -1;
            if (mt_skip(tab->forward, &key_off, &key_len, c)) return plen;
        }
        if (plen + rlen > MAX_PATCH) return -1;
        memcpy(patch + plen, r, rlen * sizeof(ch_t));
        plen += rlen;
        prev = r;
        prev_len = rlen;
        if (key_len > 0) { last_off = key_off; last_len = key_len; }
    }
    return plen;
}

/* egothor.apply_patch on b[0..*n) (capacity >= *n + plen/2). */
static void apply_patch(ch_t *b, Py_ssize_t *n, const ch_t *patch, Py_ssize_t plen) {
    if (*n == 0) return;
    Py_ssize_t pos = *n - 1;
    for (Py_ssize_t i = 0; i < plen / 2; i++) {
        ch_t cmd = patch[2 * i], letter = patch[2 * i + 1];
        long offset = (long)letter - 'a';
        if (cmd == '-') {
            pos -= offset;
        } else if (cmd == 'R') {
            if (pos < 0 || pos >= *n) return;
            b[pos] = letter;
        } else if (cmd == 'D') {
            Py_ssize_t orig = pos;
            pos -= offset;
            if (pos < 0 || pos >= *n) return;
            Py_ssize_t hi = orig + 1 < *n ? orig + 1 : *n;
            if (hi > pos) {
                memmove(b + pos, b + hi, (*n - hi) * sizeof(ch_t));
                *n -= hi - pos;
            }
        } else if (cmd == 'I') {
            pos += 1;
            if (pos < 0 || pos > *n) return;
            memmove(b + pos + 1, b + pos, (*n - pos) * sizeof(ch_t));
            b[pos] = letter;
            *n += 1;
        }
        pos -= 1;
    }
}

#define STEMPEL_MIN_LENGTH 3

/* ------------------------------------------------------------------------------------------ */
/* Stemmer type                                                                                */

enum { K_PORTER = 1, K_STEMPEL = 2 };

typedef struct {
    PyObject_HEAD
    int kind;
    Table *table;
} StemmerObject;

static PyTypeObject StemmerType;

static PyObject *stem_word(StemmerObject *self, PyObject *word) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(word);
    if (self->kind == K_PORTER && len <= 2 && PyUnicode_KIND(word) != PyUnicode_4BYTE_KIND) return Py_NewRef(word);
    if (self->kind == K_STEMPEL && len <= STEMPEL_MIN_LENGTH && PyUnicode_KIND(word) != PyUnicode_4BYTE_KIND)
        return Py_NewRef(word);
    Buf buf;
    int wide;
    if (load_units(word, &buf, self->kind == K_STEMPEL ? MAX_PATCH / 2 + 8 : 8, &wide) < 0) return NULL;
    Py_ssize_t n = buf.n;
    PyObject *out;
    if (self->kind == K_PORTER) {
        Py_ssize_t m = porter_units(buf.b, n);
        out = units_to_str(buf.b, m, wide);
    } else {
        ch_t patch[MAX_PATCH];
        Py_ssize_t plen = n <= STEMPEL_MIN_LENGTH ? -1 : mt_last_on_path(self->table, buf.b, n, patch);
        Py_ssize_t m = n;
        if (plen > 0) apply_patch(buf.b, &m, patch, plen);
        if (plen > 0 && m > 0) {
            out = units_to_str(buf.b, m, wide);
        } else if (!wide) {
            out = Py_NewRef(word);
        } else { /* the word unchanged, but through UTF-16 units like every wide word */
            buf_free(&buf);
            if (load_units(word, &buf, 0, &wide) < 0) return NULL;
            out = units_to_str(buf.b, buf.n, wide);
        }
    }
    buf_free(&buf);
    return out;
}

static PyObject *Stemmer_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *word;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "stemmer takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "U", &word)) return NULL;
    return stem_word((StemmerObject *)self, word);
}

static void Stemmer_dealloc(StemmerObject *self) {
    if (self->table) table_free(self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Stemmer_repr(StemmerObject *self) {
    return PyUnicode_FromString(self->kind == K_PORTER ? "<compiled porter stemmer>" : "<compiled stempel stemmer>");
}

static PyTypeObject StemmerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "beirx._speedups.Stemmer",
    .tp_basicsize = sizeof(StemmerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled one-word stemmer (call it with a str).",
    .tp_call = Stemmer_call,
    .tp_dealloc = (destructor)Stemmer_dealloc,
    .tp_repr = (reprfunc)Stemmer_repr,
};

static PyObject *make_porter(PyObject *mod, PyObject *noargs) {
    StemmerObject *s = PyObject_New(StemmerObject, &StemmerType);
    if (!s) return NULL;
    s->kind = K_PORTER;
    s->table = NULL;
    return (PyObject *)s;
}

static PyObject *make_stempel(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Table *tab = table_parse(view.buf, view.len);
    PyBuffer_Release(&view);
    if (!tab) return NULL;
    StemmerObject *s = PyObject_New(StemmerObject, &StemmerType);
    if (!s) { table_free(tab); return NULL; }
    s->kind = K_STEMPEL;
    s->table = tab;
    return (PyObject *)s;
}

/* ------------------------------------------------------------------------------------------ */
/* analyze_tokens                                                                               */

static PyObject *EMPTY;

/* LanguagePack._term for one token (new reference). */
static PyObject *term_of(PyObject *tok, PyObject *articles, int possessive, PyObject *stop, PyObject *stem) {
    PyObject *token = Py_NewRef(tok);
    if (articles != Py_None && PySet_GET_SIZE(articles) > 0) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(token);
        Py_ssize_t a = PyUnicode_FindChar(token, '\'', 0, n, 1);
        Py_ssize_t b = PyUnicode_FindChar(token, 0x2019, 0, n, 1);
        if (a == -2 || b == -2) goto error;
        Py_ssize_t cut = a < 0 ? b : (b < 0 ? a : (a < b ? a : b));
        if (cut >= 0) {
            PyObject *prefix = PyUnicode_Substring(token, 0, cut);
            if (!prefix) goto error;
            int hit = PySet_Contains(articles, prefix);
            Py_DECREF(prefix);
            if (hit < 0) goto error;
            if (hit) {
                PyObject *rest = PyUnicode_Substring(token, cut + 1, n);
                if (!rest) goto error;
                Py_SETREF(token, rest);
            }
        }
    }
    if (possessive) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(token);
        if (n >= 2 && PyUnicode_READ_CHAR(token, n - 1) == 's') {
            Py_UCS4 c = PyUnicode_READ_CHAR(token, n - 2);
            if (c == '\'' || c == 0x2019 || c == 0xFF07) {
                PyObject *cut = PyUnicode_Substring(token, 0, n - 2);
                if (!cut) goto error;
                Py_SETREF(token, cut);
            }
        }
    }
    int hit = PySet_Contains(stop, token);
    if (hit < 0) goto error;
    if (hit) {
        Py_DECREF(token);
        return Py_NewRef(EMPTY);
    }
    if (stem == Py_None) return token;
    PyObject *out = Py_IS_TYPE(stem, &StemmerType) ? stem_word((StemmerObject *)stem, token)
                                                   : PyObject_CallOneArg(stem, token);
    Py_DECREF(token);
    if (out && !PyUnicode_Check(out)) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "stemmer returned a non-str");
        return NULL;
    }
    return out;
error:
    Py_DECREF(token);
    return NULL;
}

static PyObject *analyze_tokens(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "analyze_tokens(tokens, memo, memo_max, articles, possessive, stop, stem)");
        return NULL;
    }
    PyObject *tokens = args[0], *memo = args[1], *articles = args[3], *stop = args[5], *stem = args[6];
    Py_ssize_t memo_max = PyLong_AsSsize_t(args[2]);
    int possessive = PyObject_IsTrue(args[4]);
    if ((memo_max == -1 && PyErr_Occurred()) || possessive < 0) return NULL;
    if (!PyList_Check(tokens) || (memo != Py_None && !PyDict_Check(memo)) || !PyAnySet_Check(stop) ||
        (articles != Py_None && !PyAnySet_Check(articles))) {
        PyErr_SetString(PyExc_TypeError, "analyze_tokens: list, dict|None, int, set|None, bool, set, stemmer");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tok = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(tok)) {
            PyErr_SetString(PyExc_TypeError, "tokens must be str");
            goto error;
        }
        PyObject *term = NULL;
        if (memo != Py_None) {
            term = PyDict_GetItemWithError(memo, tok);
            if (term) {
                Py_INCREF(term);
            } else if (PyErr_Occurred()) {
                goto error;
            }
        }
        if (!term) {
            term = term_of(tok, articles, possessive, stop, stem);
            if (!term) goto error;
            if (memo != Py_None && PyDict_GET_SIZE(memo) < memo_max && PyDict_SetItem(memo, tok, term) < 0) {
                Py_DECREF(term);
                goto error;
            }
        }
        if (PyUnicode_GET_LENGTH(term) > 0 && PyList_Append(out, term) < 0) {
            Py_DECREF(term);
            goto error;
        }
        Py_DECREF(term);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* count_terms                                                                                  */

static int append_i32(PyObject *ba, const int *vals, Py_ssize_t n) {
    Py_ssize_t old = PyByteArray_GET_SIZE(ba);
    if (PyByteArray_Resize(ba, old + n * 4) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(ba) + old, vals, n * 4);
    return 0;
}

/* count_terms(terms, vocab, ids, tfs) -> number of distinct terms. New terms get id len(vocab) in order
 * of first occurrence; (id, tf) pairs are appended as native int32 to the two bytearrays, distinct
 * terms in order of first occurrence (collections.Counter's order). */
static PyObject *count_terms(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyByteArray_Check(args[2]) ||
        !PyByteArray_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "count_terms(terms: list, vocab: dict, ids: bytearray, tfs: bytearray)");
        return NULL;
    }
    PyObject *terms = args[0], *vocab = args[1];
    Py_ssize_t n = PyList_GET_SIZE(terms);
    Py_ssize_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    int stack_slots[256], stack_ids[128], stack_tfs[128];
    int *slots = cap <= 256 ? stack_slots : PyMem_Malloc(cap * sizeof(int));
    int *ids = n <= 128 ? stack_ids : PyMem_Malloc((n ? n : 1) * sizeof(int));
    int *tfs = n <= 128 ? stack_tfs : PyMem_Malloc((n ? n : 1) * sizeof(int));
    PyObject *result = NULL;
    if (!slots || !ids || !tfs) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < cap; i++) slots[i] = -1;
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *term = PyList_GET_ITEM(terms, i);
        PyObject *id_obj = PyDict_GetItemWithError(vocab, term);
        long id;
        if (id_obj) {
            id = PyLong_AsLong(id_obj);
            if (id == -1 && PyErr_Occurred()) goto done;
        } else {
            if (PyErr_Occurred()) goto done;
            id = (long)PyDict_GET_SIZE(vocab);
            PyObject *new_id = PyLong_FromLong(id);
            if (!new_id) goto done;
            int rc = PyDict_SetItem(vocab, term, new_id);
            Py_DECREF(new_id);
            if (rc < 0) goto done;
        }
        if (id < 0 || id > 0x7FFFFFFF) {
            PyErr_SetString(PyExc_OverflowError, "term id out of int32 range");
            goto done;
        }
        Py_ssize_t h = ((unsigned long)id * 2654435761UL) & (cap - 1);
        for (;;) {
            int s = slots[h];
            if (s < 0) {
                slots[h] = (int)distinct;
                ids[distinct] = (int)id;
                tfs[distinct] = 1;
                distinct++;
                break;
            }
            if (ids[s] == (int)id) {
                tfs[s]++;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    if (append_i32(args[2], ids, distinct) < 0 || append_i32(args[3], tfs, distinct) < 0) goto done;
    result = PyLong_FromSsize_t(distinct);
done:
    if (slots && slots != stack_slots) PyMem_Free(slots);
    if (ids && ids != stack_ids) PyMem_Free(ids);
    if (tfs && tfs != stack_tfs) PyMem_Free(tfs);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* trec_lines                                                                                   */

typedef struct {
    double score;
    PyObject *did;
} Entry;

static int cmp_entry(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    /* evaluation order: score descending, then doc ID descending */
    if (x->score > y->score) return -1;
    if (x->score < y->score) return 1;
    int c = PyUnicode_Compare(y->did, x->did);
    return c;
}

/* Growing UTF-8 byte buffer. */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Out;

static int out_put(Out *o, const char *s, Py_ssize_t len) {
    if (o->n + len > o->cap) {
        Py_ssize_t cap = (o->cap + len) * 2;
        char *p = PyMem_Realloc(o->p, cap);
        if (!p) { PyErr_NoMemory(); return -1; }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, s, len);
    o->n += len;
    return 0;
}

/* trec_lines(qid, docs: dict[str, float], tag) -> str, or None when a score is NaN or an ID is not a str
 * (the caller then takes the Python path): the run lines of one query in evaluation order,
 * f"{qid} Q0 {did} {rank} {float(score)!r} {tag}\n" each. */
static PyObject *trec_lines(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyDict_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "trec_lines(qid: str, docs: dict, tag: str)");
        return NULL;
    }
    PyObject *docs = args[1];
    Py_ssize_t n = PyDict_GET_SIZE(docs);
    Entry *entries = PyMem_Malloc((n ? n : 1) * sizeof(Entry));
    if (!entries) return PyErr_NoMemory();
    Py_ssize_t pos = 0, i = 0, qlen, tlen;
    PyObject *key, *value;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0};
    const char *q = PyUnicode_AsUTF8AndSize(args[0], &qlen), *t = PyUnicode_AsUTF8AndSize(args[2], &tlen);
    if (!q || !t) goto done;
    while (PyDict_Next(docs, &pos, &key, &value)) {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) goto done;
        if (!PyUnicode_Check(key) || v != v) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        entries[i].score = v;
        entries[i].did = key;
        i++;
    }
    qsort(entries, n, sizeof(Entry), cmp_entry);
    if (PyErr_Occurred()) goto done;
    char num[32];
    for (i = 0; i < n; i++) {
        Py_ssize_t dlen;
        const char *d = PyUnicode_AsUTF8AndSize(entries[i].did, &dlen);
        if (!d) goto done;
        char *repr = PyOS_double_to_string(entries[i].score, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (!repr) goto done;
        int rc = out_put(&o, q, qlen) || out_put(&o, " Q0 ", 4) || out_put(&o, d, dlen);
        snprintf(num, sizeof(num), " %zd ", i + 1);
        rc = rc || out_put(&o, num, (Py_ssize_t)strlen(num)) || out_put(&o, repr, (Py_ssize_t)strlen(repr)) ||
             out_put(&o, " ", 1) || out_put(&o, t, tlen) || out_put(&o, "\n", 1);
        PyMem_Free(repr);
        if (rc) goto done;
    }
    result = PyUnicode_DecodeUTF8(o.p ? o.p : "", o.n, "strict");
done:
    PyMem_Free(o.p);
    PyMem_Free(entries);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* simple_tokenize: tokenizer.py's fast pattern for text without "complex" characters            */

enum { C_LETTER = 1, C_DIGIT = 2, C_MIDLETTER = 4, C_MIDNUM = 8, C_COMPLEX = 16 };
#define MAX_TOKEN_LENGTH 255

/* simple_tokenize(text, classes) -> lowercased tokens, or None when the text needs the full grammar
 * (a supplementary or "complex" character, or a token longer than MAX_TOKEN_LENGTH).
 * classes: 65536 bytes of C_* bits per BMP character. Same result as tokenizer.py's `simple` pattern
 * (runs of letters/digits joined by a MidLetter between letters or a MidNum between digits) followed
 * by java_lower (per-character simple lowercase mapping). */
static PyObject *simple_tokenize(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "simple_tokenize(text: str, classes: bytes)");
        return NULL;
    }
    PyObject *text = args[0];
    int kind = PyUnicode_KIND(text);
    if (kind == PyUnicode_4BYTE_KIND) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len != 65536) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "classes must hold 65536 bytes");
        return NULL;
    }
    const unsigned char *cls = view.buf;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    PyObject *out = PyList_New(0);
    if (!out) goto fail;
    ch_t tok[MAX_TOKEN_LENGTH + 1];
#define CLS(k) cls[PyUnicode_READ(kind, data, (k))]
    for (Py_ssize_t k = 0; k < n; k++)
        if (CLS(k) & C_COMPLEX) goto none;
    while (i < n) {
        unsigned char c = CLS(i);
        if (!(c & (C_LETTER | C_DIGIT))) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        for (;;) {
            while (i < n && (CLS(i) & (C_LETTER | C_DIGIT))) i++;
            if (i + 1 < n) {
                unsigned char m = CLS(i), prev = CLS(i - 1), next = CLS(i + 1);
                if (((m & C_MIDLETTER) && (prev & C_LETTER) && (next & C_LETTER)) ||
                    ((m & C_MIDNUM) && (prev & C_DIGIT) && (next & C_DIGIT))) {
                    i++;
                    continue;
                }
            }
            break;
        }
        if (i - start > MAX_TOKEN_LENGTH) goto none;
        for (Py_ssize_t k = start; k < i; k++) tok[k - start] = Py_UNICODE_TOLOWER(PyUnicode_READ(kind, data, k));
        PyObject *t = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, tok, i - start);
        if (!t) goto fail;
        int rc = PyList_Append(out, t);
        Py_DECREF(t);
        if (rc < 0) goto fail;
    }
#undef CLS
    PyBuffer_Release(&view);
    return out;
none:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"porter", make_porter, METH_NOARGS, "porter() -> the compiled Lucene Porter stemmer."},
    {"stempel", make_stempel, METH_O, "stempel(table_bytes) -> the compiled Stempel stemmer over a MultiTrie2 table."},
    {"analyze_tokens", (PyCFunction)(void (*)(void))analyze_tokens, METH_FASTCALL,
     "analyze_tokens(tokens, memo, memo_max, articles, possessive, stop, stem) -> terms."},
    {"count_terms", (PyCFunction)(void (*)(void))count_terms, METH_FASTCALL,
     "count_terms(terms, vocab, ids, tfs) -> number of distinct terms."},
    {"trec_lines", (PyCFunction)(void (*)(void))trec_lines, METH_FASTCALL,
     "trec_lines(qid, docs, tag) -> the TREC run lines of one query."},
    {"simple_tokenize", (PyCFunction)(void (*)(void))simple_tokenize, METH_FASTCALL,
     "simple_tokenize(text, classes) -> lowercased tokens, or None when the full grammar is needed."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    if (PyType_Ready(&StemmerType) < 0) return NULL;
    EMPTY = PyUnicode_FromString("");
    if (!EMPTY) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&StemmerType);
    if (PyModule_AddObject(m, "Stemmer", (PyObject *)&StemmerType) < 0) return NULL;
    return m;
}
