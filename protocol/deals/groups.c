/* Sets of masks kept in groups, and the counting rule on them, on fixed-width words.
 *
 * The compiled twin of groups.py, which is the definition: the same functions and class,
 * the same arguments, the same results in the same order.  Built by tools/native.py into
 * protocol/deals/groups.<tag>.so, which Python imports in place of the .py file.
 *
 * Two representations replace CPython's integers:
 *   - a packed sum of the counting rule (39 fields of 10 bits, possibly negative as a
 *     whole) is kept mod 2**512 as eight 64-bit words, two's complement.  Addition mod
 *     2**512 leaves the low 512 bits of every sum as CPython computes them, and the lost
 *     bits all lie below bit 400, so "(a + b) & lost" has the same truth value here;
 *   - a set of bottom-row masks (bit b for the mask b, b < 1024) is read straight from the
 *     int's own digits (30 bits each in CPython 3.11, cpython/longintrepr.h) and made as
 *     one, so that no conversion stands between an int and the loops over its digits.
 *     tools/native.py builds this file for CPython 3.11 only, whose layout it reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SUM_WORDS 8   /* a packed sum mod 2**512 */
#define SUM_BYTES (SUM_WORDS * 8)
#define POSITIONS 28

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "groups.c reads the digits of CPython 3.11's integers"
#endif
/* 1,024 bottom-row masks in digits of PyLong_SHIFT bits */
#define SET_DIGITS ((1024 + PyLong_SHIFT - 1) / PyLong_SHIFT)
#define SET_BYTES (SET_DIGITS * sizeof(digit))

#if PY_BIG_ENDIAN
#error "groups.c assumes a little-endian machine"
#endif

typedef struct { uint64_t w[SUM_WORDS]; } sum_t;
typedef struct { digit d[SET_DIGITS]; } set_t;

typedef struct {
    PyObject_HEAD
    Py_ssize_t draws;   /* entries of bias and lost */
    Py_ssize_t tops;    /* entries of credit */
    sum_t *bias;
    sum_t *lost;
    sum_t *credit;
    sum_t most, least;
    sum_t low[1024], mid[256], bottom[1024];
} GroupTest;

static inline void sum_add(sum_t *out, const sum_t *a, const sum_t *b) {
    unsigned __int128 carry = 0;
    for (int i = 0; i < SUM_WORDS; i++) {
        carry += (unsigned __int128)a->w[i] + b->w[i];
        out->w[i] = (uint64_t)carry;
        carry >>= 64;
    }
}

static inline void sum_sub(sum_t *out, const sum_t *a, const sum_t *b) {
    sum_t negated;
    unsigned __int128 carry = 1;
    for (int i = 0; i < SUM_WORDS; i++) {
        carry += (uint64_t)~b->w[i];
        negated.w[i] = (uint64_t)carry;
        carry >>= 64;
    }
    sum_add(out, a, &negated);
}

/* (a + b) & lost is not zero */
static inline int sum_lost(const sum_t *a, const sum_t *b, const sum_t *lost) {
    unsigned __int128 carry = 0;
    uint64_t any = 0;
    for (int i = 0; i < SUM_WORDS; i++) {
        carry += (unsigned __int128)a->w[i] + b->w[i];
        any |= (uint64_t)carry & lost->w[i];
        carry >>= 64;
    }
    return any != 0;
}

/* A Python int into a packed sum mod 2**512 (-1 with an exception when it is not an int
 * or needs more than 512 bits). */
static int to_sum(PyObject *value, sum_t *out) {
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a packed sum must be an int, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    return _PyLong_AsByteArray((PyLongObject *)value, (unsigned char *)out->w, SUM_BYTES, 1, 1);
}

static int set_too_large(void) {
    PyErr_SetString(PyExc_OverflowError, "a set of bottom-row masks has at most 1,024 bits");
    return -1;
}

/* A Python int into a set of bottom-row masks (-1 with an exception when it is not a
 * non-negative int of at most 1,024 bits). */
static int to_set(PyObject *value, set_t *out) {
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a set of bottom-row masks must be an int, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    Py_ssize_t size = Py_SIZE(value);
    if (size < 0) {
        PyErr_SetString(PyExc_OverflowError, "a set of bottom-row masks cannot be negative");
        return -1;
    }
    if (size > SET_DIGITS) return set_too_large();
    const digit *digits = ((PyLongObject *)value)->ob_digit;
    if (size == SET_DIGITS && digits[SET_DIGITS - 1] >> (1024 - (SET_DIGITS - 1) * PyLong_SHIFT))
        return set_too_large();
    memcpy(out->d, digits, (size_t)size * sizeof(digit));
    memset(out->d + size, 0, (size_t)(SET_DIGITS - size) * sizeof(digit));
    return 0;
}

static PyObject *from_set(const set_t *set) {
    Py_ssize_t size = SET_DIGITS;
    while (size > 0 && set->d[size - 1] == 0) size--;
    if (size <= 1) return PyLong_FromLong(size ? (long)set->d[0] : 0);
    PyLongObject *made = _PyLong_New(size);
    if (made == NULL) return NULL;
    memcpy(made->ob_digit, set->d, (size_t)size * sizeof(digit));
    return (PyObject *)made;
}

static inline int set_count(const set_t *s) {
    int count = 0;
    for (int i = 0; i < SET_DIGITS; i++) count += __builtin_popcount(s->d[i]);
    return count;
}

static inline int set_empty(const set_t *s) {
    digit any = 0;
    for (int i = 0; i < SET_DIGITS; i++) any |= s->d[i];
    return any == 0;
}

static inline int set_equal(const set_t *a, const set_t *b) {
    return memcmp(a->d, b->d, SET_BYTES) == 0;
}

/* bits &= ~had; true when that took anything out */
static inline int set_remove(set_t *bits, const set_t *had) {
    int changed = 0;
    for (int i = 0; i < SET_DIGITS; i++) {
        digit kept = bits->d[i] & ~had->d[i];
        changed |= kept != bits->d[i];
        bits->d[i] = kept;
    }
    return changed;
}

/* table[s] = the sum of weights[j] over the bits j of s, for the n weights from first */
static void subset_sums(sum_t *table, const sum_t *weights, int n) {
    memset(&table[0], 0, sizeof(sum_t));
    for (int j = 0; j < n; j++) {
        int half = 1 << j;
        for (int s = 0; s < half; s++) sum_add(&table[half + s], &table[s], &weights[j]);
    }
}

static void GroupTest_dealloc(GroupTest *self) {
    PyMem_Free(self->bias);
    PyMem_Free(self->lost);
    PyMem_Free(self->credit);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int GroupTest_init(GroupTest *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"weights", "most", "least", "biases", "credits", NULL};
    PyObject *weights, *most, *least, *biases, *credits;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO", names, &weights, &most, &least,
                                     &biases, &credits))
        return -1;
    PyObject *wseq = PySequence_Fast(weights, "weights must be a sequence");
    if (wseq == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(wseq) != POSITIONS) {
        PyErr_Format(PyExc_ValueError, "28 weights expected, got %zd",
                     PySequence_Fast_GET_SIZE(wseq));
        Py_DECREF(wseq);
        return -1;
    }
    sum_t w[POSITIONS];
    for (int p = 0; p < POSITIONS; p++) {
        if (to_sum(PySequence_Fast_GET_ITEM(wseq, p), &w[p]) < 0) {
            Py_DECREF(wseq);
            return -1;
        }
    }
    Py_DECREF(wseq);
    if (to_sum(most, &self->most) < 0 || to_sum(least, &self->least) < 0) return -1;
    subset_sums(self->low, &w[0], 10);
    subset_sums(self->mid, &w[10], 8);
    subset_sums(self->bottom, &w[18], 10);

    PyObject *bseq = PySequence_Fast(biases, "biases must be a sequence");
    if (bseq == NULL) return -1;
    Py_ssize_t draws = PySequence_Fast_GET_SIZE(bseq);
    PyMem_Free(self->bias);
    PyMem_Free(self->lost);
    self->bias = PyMem_Calloc(draws ? draws : 1, sizeof(sum_t));
    self->lost = PyMem_Calloc(draws ? draws : 1, sizeof(sum_t));
    self->draws = 0;
    if (self->bias == NULL || self->lost == NULL) {
        Py_DECREF(bseq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t d = 0; d < draws; d++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(bseq, d);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "each bias must be a (bias, lost) tuple");
            Py_DECREF(bseq);
            return -1;
        }
        if (to_sum(PyTuple_GET_ITEM(pair, 0), &self->bias[d]) < 0 ||
            to_sum(PyTuple_GET_ITEM(pair, 1), &self->lost[d]) < 0) {
            Py_DECREF(bseq);
            return -1;
        }
    }
    Py_DECREF(bseq);
    self->draws = draws;

    PyObject *cseq = PySequence_Fast(credits, "credits must be a sequence");
    if (cseq == NULL) return -1;
    Py_ssize_t tops = PySequence_Fast_GET_SIZE(cseq);
    PyMem_Free(self->credit);
    self->credit = PyMem_Calloc(tops ? tops : 1, sizeof(sum_t));
    self->tops = 0;
    if (self->credit == NULL) {
        Py_DECREF(cseq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t t = 0; t < tops; t++) {
        if (to_sum(PySequence_Fast_GET_ITEM(cseq, t), &self->credit[t]) < 0) {
            Py_DECREF(cseq);
            return -1;
        }
    }
    Py_DECREF(cseq);
    self->tops = tops;
    return 0;
}

/* The moves on one top (groups.Playable), as words. */
typedef struct {
    set_t bottom;
    Py_ssize_t seconds, highers;
    long *second_bit;
    set_t *second_holding;
    long *higher_needed;
    long *higher_played;
} playable_t;

static void playable_free(playable_t *p) {
    PyMem_Free(p->second_bit);
    PyMem_Free(p->second_holding);
    PyMem_Free(p->higher_needed);
    PyMem_Free(p->higher_played);
}

static int pair_of(PyObject *item, PyObject **a, PyObject **b) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "the playable moves must be pairs");
        return -1;
    }
    *a = PyTuple_GET_ITEM(item, 0);
    *b = PyTuple_GET_ITEM(item, 1);
    return 0;
}

static int playable_from(PyObject *obj, playable_t *p) {
    memset(p, 0, sizeof(*p));
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 3) {
        PyErr_SetString(PyExc_TypeError, "playable must be a (bottom, second, higher) tuple");
        return -1;
    }
    if (to_set(PyTuple_GET_ITEM(obj, 0), &p->bottom) < 0) return -1;
    PyObject *second = PyTuple_GET_ITEM(obj, 1), *higher = PyTuple_GET_ITEM(obj, 2);
    if (!PyTuple_Check(second) || !PyTuple_Check(higher)) {
        PyErr_SetString(PyExc_TypeError, "the playable moves must be tuples");
        return -1;
    }
    p->seconds = PyTuple_GET_SIZE(second);
    p->highers = PyTuple_GET_SIZE(higher);
    p->second_bit = PyMem_Calloc(p->seconds + 1, sizeof(long));
    p->second_holding = PyMem_Calloc(p->seconds + 1, sizeof(set_t));
    p->higher_needed = PyMem_Calloc(p->highers + 1, sizeof(long));
    p->higher_played = PyMem_Calloc(p->highers + 1, sizeof(long));
    if (!p->second_bit || !p->second_holding || !p->higher_needed || !p->higher_played) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *a, *b;
    for (Py_ssize_t i = 0; i < p->seconds; i++) {
        if (pair_of(PyTuple_GET_ITEM(second, i), &a, &b) < 0) return -1;
        p->second_bit[i] = PyLong_AsLong(a);
        if (p->second_bit[i] == -1 && PyErr_Occurred()) return -1;
        if (to_set(b, &p->second_holding[i]) < 0) return -1;
    }
    for (Py_ssize_t i = 0; i < p->highers; i++) {
        if (pair_of(PyTuple_GET_ITEM(higher, i), &a, &b) < 0) return -1;
        p->higher_needed[i] = PyLong_AsLong(a);
        if (p->higher_needed[i] == -1 && PyErr_Occurred()) return -1;
        p->higher_played[i] = PyLong_AsLong(b);
        if (p->higher_played[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Leave out of bits the masks with no card to play on the top; 0 when none is left. */
static int keep_playable(const playable_t *p, long upper, set_t *bits) {
    set_t can;
    int all = 1;
    for (int i = 0; i < SET_DIGITS; i++) {
        can.d[i] = bits->d[i] & p->bottom.d[i];
        all &= can.d[i] == bits->d[i];
    }
    if (all) return !set_empty(bits);
    for (Py_ssize_t i = 0; i < p->highers; i++) {
        if ((upper & p->higher_needed[i]) == p->higher_played[i])
            return !set_empty(bits); /* a higher card, free in the whole group */
    }
    for (Py_ssize_t i = 0; i < p->seconds; i++) {
        if (!(upper & p->second_bit[i])) {
            for (int k = 0; k < SET_DIGITS; k++) can.d[k] |= bits->d[k] & p->second_holding[i].d[k];
        }
    }
    *bits = can;
    return !set_empty(bits);
}

static PyObject *GroupTest_keep(GroupTest *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"groups", "drawn", "top", "seen", "playable", NULL};
    PyObject *groups, *seen, *playable_obj;
    Py_ssize_t drawn, top;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!nnOO", names, &PyDict_Type, &groups,
                                     &drawn, &top, &seen, &playable_obj))
        return NULL;
    if (drawn < 0 || drawn >= self->draws) {
        PyErr_Format(PyExc_IndexError, "drawn %zd out of range (0 to %zd)", drawn,
                     self->draws - 1);
        return NULL;
    }
    if (top < 0 || top >= self->tops) {
        PyErr_Format(PyExc_IndexError, "top %zd out of range (0 to %zd)", top, self->tops - 1);
        return NULL;
    }
    int use_seen = 0;
    if (seen != Py_None) {
        if (!PyDict_Check(seen)) {
            PyErr_SetString(PyExc_TypeError, "seen must be a dict or None");
            return NULL;
        }
        use_seen = PyDict_GET_SIZE(seen) > 0;
    }
    playable_t playable;
    int use_playable = playable_obj != Py_None;
    if (use_playable && playable_from(playable_obj, &playable) < 0) {
        playable_free(&playable);
        return NULL;
    }
    sum_t bias;
    sum_sub(&bias, &self->bias[drawn], &self->credit[top]);
    const sum_t *lost = &self->lost[drawn];
    PyObject *kept = PyDict_New();
    if (kept == NULL) goto failed;

    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(groups, &pos, &key, &value)) {
        long upper = PyLong_AsLong(key);
        if (upper == -1 && PyErr_Occurred()) goto failed;
        if (upper < 0 || upper >= (1L << 18)) {
            PyErr_Format(PyExc_ValueError, "upper-row mask %ld out of range", upper);
            goto failed;
        }
        set_t bits, original;
        if (to_set(value, &bits) < 0) goto failed;
        original = bits;
        if (use_seen) {
            PyObject *old = PyDict_GetItemWithError(seen, key);
            if (old == NULL && PyErr_Occurred()) goto failed;
            if (old != NULL) {
                set_t had;
                if (to_set(old, &had) < 0) goto failed;
                set_remove(&bits, &had);
                if (set_empty(&bits)) continue;
            }
        }
        if (use_playable && !keep_playable(&playable, upper, &bits)) continue;
        sum_t base;
        sum_add(&base, &self->low[upper & 1023], &self->mid[upper >> 10]);
        sum_add(&base, &base, &bias);
        /* passes whatever its bottom row holds unless the most it can add is lost; fails
         * whatever it holds when the least is; else mask by mask */
        if (sum_lost(&base, &self->most, lost)) {
            if (sum_lost(&base, &self->least, lost)) continue;
            for (int i = 0; i < SET_DIGITS; i++) {
                digit rest = bits.d[i];
                while (rest) {
                    int bit = __builtin_ctz(rest);
                    rest &= rest - 1;
                    if (sum_lost(&base, &self->bottom[i * PyLong_SHIFT + bit], lost))
                        bits.d[i] &= ~((digit)1 << bit);
                }
            }
            if (set_empty(&bits)) continue;
        }
        int stored;
        if (set_equal(&bits, &original)) {
            stored = PyDict_SetItem(kept, key, value);
        } else {
            PyObject *made = from_set(&bits);
            if (made == NULL) goto failed;
            stored = PyDict_SetItem(kept, key, made);
            Py_DECREF(made);
        }
        if (stored < 0) goto failed;
    }
    if (use_playable) playable_free(&playable);
    return kept;

failed:
    Py_XDECREF(kept);
    if (use_playable) playable_free(&playable);
    return NULL;
}

static PyMethodDef GroupTest_methods[] = {
    {"keep", (PyCFunction)(void (*)(void))GroupTest_keep, METH_VARARGS | METH_KEYWORDS,
     "The masks of groups not in seen, with a card to play (when playable is given) and not "
     "lost with drawn cards drawn and this top, in their order."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GroupTestType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "protocol.deals.groups.GroupTest",
    .tp_doc = "The counting rule of one deal and draw limit, for groups of masks.",
    .tp_basicsize = sizeof(GroupTest),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)GroupTest_init,
    .tp_dealloc = (destructor)GroupTest_dealloc,
    .tp_methods = GroupTest_methods,
};

/* The set operations on groups (groups.py: take_new, met_first, merge). */

static inline int truthy_int(PyObject *value) {
    return PyLong_CheckExact(value) ? Py_SIZE(value) != 0 : PyObject_IsTrue(value);
}

/* into[key] = a | b, reusing a when b adds nothing */
static int store_union(PyObject *into, PyObject *key, PyObject *a_obj, const set_t *a,
                       const set_t *b) {
    set_t both;
    int grows = 0;
    for (int i = 0; i < SET_DIGITS; i++) {
        both.d[i] = a->d[i] | b->d[i];
        grows |= both.d[i] != a->d[i];
    }
    if (!grows) return PyDict_SetItem(into, key, a_obj);
    PyObject *made = from_set(&both);
    if (made == NULL) return -1;
    int stored = PyDict_SetItem(into, key, made);
    Py_DECREF(made);
    return stored;
}

/* into[key] = bits, as the given object when bits is its value */
static int store_set(PyObject *into, PyObject *key, const set_t *bits, PyObject *same) {
    if (same != NULL) return PyDict_SetItem(into, key, same);
    PyObject *made = from_set(bits);
    if (made == NULL) return -1;
    int stored = PyDict_SetItem(into, key, made);
    Py_DECREF(made);
    return stored;
}

/* into[key] |= bits (a new entry when key is not there) */
static int or_into(PyObject *into, PyObject *key, const set_t *bits, PyObject *same) {
    PyObject *old = PyDict_GetItemWithError(into, key);
    if (old == NULL) {
        if (PyErr_Occurred()) return -1;
        return store_set(into, key, bits, same);
    }
    set_t had;
    if (to_set(old, &had) < 0) return -1;
    Py_INCREF(old);
    int stored = store_union(into, key, old, &had, bits);
    Py_DECREF(old);
    return stored;
}

static PyObject *groups_take_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "take_new(seen: dict, groups: dict)");
        return NULL;
    }
    PyObject *seen = args[0], *groups = args[1];
    PyObject *fresh = PyDict_New();
    if (fresh == NULL) return NULL;
    long count = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(groups, &pos, &key, &value)) {
        set_t bits;
        if (to_set(value, &bits) < 0) goto failed;
        PyObject *old = PyDict_GetItemWithError(seen, key);
        if (old == NULL && PyErr_Occurred()) goto failed;
        int had_any = 0;
        if (old != NULL) {
            had_any = truthy_int(old);
            if (had_any < 0) goto failed;
        }
        if (had_any) {
            set_t had;
            if (to_set(old, &had) < 0) goto failed;
            int changed = set_remove(&bits, &had);
            if (set_empty(&bits)) continue;
            Py_INCREF(old); /* the store below may drop seen's reference */
            int stored = store_union(seen, key, old, &had, &bits);
            Py_DECREF(old);
            if (stored < 0 || store_set(fresh, key, &bits, changed ? NULL : value) < 0)
                goto failed;
        } else {
            if (PyDict_SetItem(seen, key, value) < 0 || PyDict_SetItem(fresh, key, value) < 0)
                goto failed;
        }
        count += set_count(&bits);
    }
    PyObject *result = Py_BuildValue("(Nl)", fresh, count);
    return result;
failed:
    Py_DECREF(fresh);
    return NULL;
}

static PyObject *groups_met_first(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "met_first(met: dict, pieces: list)");
        return NULL;
    }
    PyObject *met = args[0];
    PyObject *pieces = PySequence_Fast(args[1], "pieces must be a sequence");
    if (pieces == NULL) return NULL;
    PyObject *fresh = PyDict_New();
    if (fresh == NULL) goto failed;
    for (Py_ssize_t p = 0; p < PySequence_Fast_GET_SIZE(pieces); p++) {
        PyObject *piece = PySequence_Fast_GET_ITEM(pieces, p);
        if (!PyTuple_Check(piece) || PyTuple_GET_SIZE(piece) != 2 ||
            !PyDict_Check(PyTuple_GET_ITEM(piece, 1))) {
            PyErr_SetString(PyExc_TypeError, "each piece must be a (top rank, groups) tuple");
            goto failed;
        }
        PyObject *groups = PyTuple_GET_ITEM(piece, 1);
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(groups, &pos, &key, &value)) {
            set_t bits, had;
            if (to_set(value, &bits) < 0) goto failed;
            PyObject *old = PyDict_GetItemWithError(met, key);
            if (old == NULL && PyErr_Occurred()) goto failed;
            int changed = 0;
            if (old != NULL) {
                if (to_set(old, &had) < 0) goto failed;
                changed = set_remove(&bits, &had);
            }
            if (set_empty(&bits)) continue;
            PyObject *same = changed ? NULL : value;
            if (old != NULL) {
                Py_INCREF(old);
                int stored = store_union(met, key, old, &had, &bits);
                Py_DECREF(old);
                if (stored < 0) goto failed;
            } else if (store_set(met, key, &bits, same) < 0) {
                goto failed;
            }
            if (or_into(fresh, key, &bits, same) < 0) goto failed;
        }
    }
    Py_DECREF(pieces);
    return fresh;
failed:
    Py_DECREF(pieces);
    Py_XDECREF(fresh);
    return NULL;
}

static PyObject *groups_merge(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge(into: dict, groups: dict)");
        return NULL;
    }
    PyObject *into = args[0], *groups = args[1];
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(groups, &pos, &key, &value)) {
        set_t bits;
        if (to_set(value, &bits) < 0 || or_into(into, key, &bits, value) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

/* out = bits shifted up by n bit positions (the bits shifted past 1,024 dropped) */
static void set_shift_up(set_t *out, const set_t *bits, long n) {
    long whole = n / PyLong_SHIFT;
    int part = (int)(n % PyLong_SHIFT);
    for (long k = SET_DIGITS - 1; k >= 0; k--) {
        long from = k - whole;
        digit d = 0;
        if (from >= 0) {
            d = (digit)((bits->d[from] << part) & PyLong_MASK);
            if (part && from >= 1) d |= bits->d[from - 1] >> (PyLong_SHIFT - part);
        }
        out->d[k] = d;
    }
}

typedef struct {
    long kind, a, c, rank;
    set_t b;            /* kinds 0 and 1 */
    long free;          /* kind 2 */
    PyObject *rank_obj; /* borrowed from the move */
} move_t;

static PyObject *groups_grow(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "grow(front: dict, fit: tuple)");
        return NULL;
    }
    PyObject *front = args[0], *fit = args[1];
    PyObject *grown = PyDict_New();
    if (grown == NULL) return NULL;
    move_t *moves = NULL;
    Py_ssize_t pos = 0;
    PyObject *top_obj, *groups;
    while (PyDict_Next(front, &pos, &top_obj, &groups)) {
        Py_ssize_t top = PyLong_AsSsize_t(top_obj);
        if (top == -1 && PyErr_Occurred()) goto failed;
        if (top < 0 || top >= PyTuple_GET_SIZE(fit) || !PyDict_Check(groups)) {
            PyErr_SetString(PyExc_ValueError, "front must map top ranks of fit to groups");
            goto failed;
        }
        PyObject *row = PyTuple_GET_ITEM(fit, top);
        if (!PyTuple_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "fit must hold tuples of moves");
            goto failed;
        }
        Py_ssize_t count = PyTuple_GET_SIZE(row);
        PyMem_Free(moves);
        moves = PyMem_Calloc(count + 1, sizeof(move_t));
        if (moves == NULL) {
            PyErr_NoMemory();
            goto failed;
        }
        for (Py_ssize_t m = 0; m < count; m++) {
            PyObject *move = PyTuple_GET_ITEM(row, m);
            if (!PyTuple_Check(move) || PyTuple_GET_SIZE(move) != 5) {
                PyErr_SetString(PyExc_TypeError, "a move must be (kind, a, b, c, rank)");
                goto failed;
            }
            move_t *mv = &moves[m];
            mv->kind = PyLong_AsLong(PyTuple_GET_ITEM(move, 0));
            mv->a = PyLong_AsLong(PyTuple_GET_ITEM(move, 1));
            mv->c = PyLong_AsLong(PyTuple_GET_ITEM(move, 3));
            mv->rank_obj = PyTuple_GET_ITEM(move, 4);
            if (PyErr_Occurred()) goto failed;
            if (mv->kind == 2) {
                mv->free = PyLong_AsLong(PyTuple_GET_ITEM(move, 2));
                if (mv->free == -1 && PyErr_Occurred()) goto failed;
            } else if (to_set(PyTuple_GET_ITEM(move, 2), &mv->b) < 0) {
                goto failed;
            }
            if (mv->kind == 0 && (mv->a <= 0 || mv->a >= 1024)) {
                PyErr_SetString(PyExc_ValueError, "a bottom-row move's shift is out of range");
                goto failed;
            }
        }
        for (Py_ssize_t m = 0; m < count; m++) {
            move_t *mv = &moves[m];
            PyObject *into = PyDict_GetItemWithError(grown, mv->rank_obj);
            if (into == NULL) {
                if (PyErr_Occurred()) goto failed;
                into = PyDict_New();
                if (into == NULL) goto failed;
                int stored = PyDict_SetItem(grown, mv->rank_obj, into);
                Py_DECREF(into); /* grown holds it */
                if (stored < 0) goto failed;
            }
            Py_ssize_t at = 0;
            PyObject *key, *value;
            while (PyDict_Next(groups, &at, &key, &value)) {
                long upper = PyLong_AsLong(key);
                if (upper == -1 && PyErr_Occurred()) goto failed;
                set_t bits;
                if (mv->kind == 0) {
                    if (to_set(value, &bits) < 0) goto failed;
                    for (int i = 0; i < SET_DIGITS; i++) bits.d[i] &= mv->b.d[i];
                    if (set_empty(&bits)) continue;
                    set_t moved;
                    set_shift_up(&moved, &bits, mv->a);
                    if (or_into(into, key, &moved, NULL) < 0) goto failed;
                } else if (mv->kind == 1) {
                    if (upper & mv->a) continue;
                    if (to_set(value, &bits) < 0) goto failed;
                    int same = 1;
                    for (int i = 0; i < SET_DIGITS; i++) {
                        digit kept = bits.d[i] & mv->b.d[i];
                        same &= kept == bits.d[i];
                        bits.d[i] = kept;
                    }
                    if (set_empty(&bits)) continue;
                    PyObject *moved_key = PyLong_FromLong(upper | mv->a);
                    if (moved_key == NULL) goto failed;
                    int stored = or_into(into, moved_key, &bits, same ? value : NULL);
                    Py_DECREF(moved_key);
                    if (stored < 0) goto failed;
                } else {
                    if ((upper & mv->free) != mv->c) continue;
                    if (to_set(value, &bits) < 0) goto failed;
                    PyObject *moved_key = PyLong_FromLong(upper | mv->a);
                    if (moved_key == NULL) goto failed;
                    int stored = or_into(into, moved_key, &bits, value);
                    Py_DECREF(moved_key);
                    if (stored < 0) goto failed;
                }
            }
        }
    }
    PyMem_Free(moves);
    return grown;
failed:
    PyMem_Free(moves);
    Py_DECREF(grown);
    return NULL;
}

static PyMethodDef groups_functions[] = {
    {"grow", (PyCFunction)(void (*)(void))groups_grow, METH_FASTCALL,
     "Every state one play away from front (top rank -> groups), per new top rank."},
    {"take_new", (PyCFunction)(void (*)(void))groups_take_new, METH_FASTCALL,
     "The masks of groups not in seen, added to it; and how many."},
    {"met_first", (PyCFunction)(void (*)(void))groups_met_first, METH_FASTCALL,
     "The masks of the (top rank, groups) pieces not in met, added to it."},
    {"merge", (PyCFunction)(void (*)(void))groups_merge, METH_FASTCALL, "Add groups to into."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef groups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "protocol.deals.groups",
    .m_doc = "Sets of masks in groups and the counting rule on them (compiled twin of groups.py).",
    .m_size = -1,
    .m_methods = groups_functions,
};

PyMODINIT_FUNC PyInit_groups(void) {
    if (PyType_Ready(&GroupTestType) < 0) return NULL;
    PyObject *module = PyModule_Create(&groups_module);
    if (module == NULL) return NULL;
    Py_INCREF(&GroupTestType);
    if (PyModule_AddObject(module, "GroupTest", (PyObject *)&GroupTestType) < 0) {
        Py_DECREF(&GroupTestType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
