/* The launch path's C half: a direct call into cuLaunchKernel, and per-specialization "plans" that pack the
 * arguments and launch in one call.
 *
 * Why: going through cuda.bindings converts eleven Python arguments to C in generic code on every launch,
 * which costs as much as the driver call itself; packing the values with struct.pack_into and then calling
 * the driver costs two more C calls and a Python frame. A Plan holds everything that does not depend on the
 * argument values (function handle, block, shared bytes, the kind of each parameter, which of the caller's
 * values the kernel takes) and its `launch(grid, stream, *values)` (METH_FASTCALL: no tuple is built) reads
 * the grid, the stream and every value straight from the Python objects, packs them and calls the driver.
 *
 * Anything it does not handle itself (a grid that is not an int or a 1-3 tuple of ints, a stream that is not
 * None or an int, a value of an unexpected type or out of its kind's range) is handed, untouched, to the
 * plan's Python `fallback(grid, stream, [selected values])` -- the Launcher, whose slow paths convert or
 * raise with the usual messages. A failed launch calls `on_error(err, (gx, gy, gz), stream)` (the Launcher's
 * handler: retry with the context made current, else raise CudaError naming the kernel).
 *
 * libcuda is opened on first launch, so the module imports on machines without a GPU. Built at run time by
 * compiler/runtime/fastlaunch.py with the system C compiler; when it cannot be built, the launch path keeps
 * using struct.pack_into and cuda.bindings.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);
static launch_fn cu_launch = NULL;

static int load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        PyErr_Format(PyExc_ImportError, "libcuda.so.1 could not be opened: %s", dlerror());
        return -1;
    }
    cu_launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
    if (!cu_launch) {
        PyErr_SetString(PyExc_ImportError, "libcuda.so.1 has no cuLaunchKernel");
        return -1;
    }
    return 0;
}

/* launch(function, gx, gy, gz, block_x, shared_bytes, stream, params_address) -> CUresult (int) */
static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "launch takes 8 integer arguments");
        return NULL;
    }
    if (!cu_launch && load_driver() < 0) return NULL;
    void *f = PyLong_AsVoidPtr(args[0]);
    unsigned long gx = PyLong_AsUnsignedLong(args[1]);
    unsigned long gy = PyLong_AsUnsignedLong(args[2]);
    unsigned long gz = PyLong_AsUnsignedLong(args[3]);
    unsigned long bx = PyLong_AsUnsignedLong(args[4]);
    unsigned long smem = PyLong_AsUnsignedLong(args[5]);
    void *stream = PyLong_AsVoidPtr(args[6]);
    void *params = PyLong_AsVoidPtr(args[7]);
    if (PyErr_Occurred()) return NULL;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = cu_launch(f, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx, 1, 1, (unsigned)smem, stream,
                    (void **)params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

/* ---- plans ------------------------------------------------------------------------------------------------ */

/* Parameter kinds (fastlaunch.py's KIND_CODES must match). SKIP: a value the caller passes that the kernel does
 * not take (the jit's constant-folded ints). Every packed parameter gets an 8-byte slot. */
enum { K_SKIP = 0, K_PTR, K_I64, K_U64, K_I32, K_U32, K_I16, K_U16, K_I8, K_U8, K_BOOL, K_F32, K_F64, K_F16,
       K_BF16, K_NKINDS };
#define MAX_PARAMS 512 /* 4 KiB of 8-byte slots: the classic kernel parameter limit */

typedef struct {
    PyObject_HEAD
    void *function;
    unsigned block_x, shared;
    Py_ssize_t n_in, n_out;
    unsigned char *kinds; /* n_in codes */
    uint64_t *buf;        /* the Launcher's slot buffer: the last packed values are copied there */
    PyObject *fallback;   /* fallback(grid, stream, [selected values]) */
    PyObject *on_error;   /* on_error(err, (gx, gy, gz), stream) */
    PyObject *keep;       /* keeps the buffer's owner alive */
} Plan;

/* An exact int >= 0 below 2**64 -> *out; 0 when it is not one (no error left set). */
static int as_u64(PyObject *v, unsigned long long *out) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) {
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (x < 0) return 0;
        *out = (unsigned long long)x;
        return 1;
    }
    if (overflow < 0) return 0;
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *out = u;
    return 1;
}

/* 1: packed; 0: not handled here (no Python error set). */
static int pack_one(int kind, PyObject *v, uint64_t *slot) {
    *slot = 0;
    switch (kind) {
    case K_PTR: {
        unsigned long long p;
        if (!PyLong_CheckExact(v) || !as_u64(v, &p)) return 0;
        *slot = p;
        return 1;
    }
    case K_U64: {
        if (!PyLong_Check(v)) return 0;
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        *slot = x;
        return 1;
    }
    case K_I64: case K_I32: case K_U32: case K_I16: case K_U16: case K_I8: case K_U8: {
        if (!PyLong_Check(v)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) return 0;
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        switch (kind) {
        case K_I64: { int64_t y = (int64_t)x; memcpy(slot, &y, 8); return 1; }
        case K_I32: { if (x < INT32_MIN || x > INT32_MAX) return 0; int32_t y = (int32_t)x; memcpy(slot, &y, 4); return 1; }
        case K_U32: { if (x < 0 || x > UINT32_MAX) return 0; uint32_t y = (uint32_t)x; memcpy(slot, &y, 4); return 1; }
        case K_I16: { if (x < INT16_MIN || x > INT16_MAX) return 0; int16_t y = (int16_t)x; memcpy(slot, &y, 2); return 1; }
        case K_U16: { if (x < 0 || x > UINT16_MAX) return 0; uint16_t y = (uint16_t)x; memcpy(slot, &y, 2); return 1; }
        case K_I8: { if (x < INT8_MIN || x > INT8_MAX) return 0; int8_t y = (int8_t)x; memcpy(slot, &y, 1); return 1; }
        default: { if (x < 0 || x > UINT8_MAX) return 0; uint8_t y = (uint8_t)x; memcpy(slot, &y, 1); return 1; }
        }
    }
    case K_BOOL:
        if (v == Py_True) { *slot = 1; return 1; }
        if (v == Py_False) return 1;
        if (PyLong_CheckExact(v)) { *slot = PyObject_IsTrue(v) ? 1 : 0; return 1; }
        return 0;
    case K_F32: case K_F64: case K_F16: case K_BF16: {
        double d;
        if (PyFloat_CheckExact(v)) d = PyFloat_AS_DOUBLE(v);
        else if (PyLong_Check(v)) {
            d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        } else return 0;
        if (kind == K_F64) { memcpy(slot, &d, 8); return 1; }
        if (kind == K_BF16) {
            /* as launch._convert_bf16: round to float32, then to nearest-even bfloat16; NaN -> 0x7FC0 */
            float f = (float)d;
            uint32_t b;
            memcpy(&b, &f, 4);
            uint16_t h = ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu))
                             ? 0x7FC0
                             : (uint16_t)((((uint64_t)b + 0x7FFFu + ((b >> 16) & 1u)) >> 16) & 0xFFFFu);
            memcpy(slot, &h, 2);
            return 1;
        }
#if PY_VERSION_HEX >= 0x030B0000
        int r = kind == K_F32 ? PyFloat_Pack4(d, (char *)slot, PY_LITTLE_ENDIAN)
                              : PyFloat_Pack2(d, (char *)slot, PY_LITTLE_ENDIAN);
#else
        int r = kind == K_F32 ? _PyFloat_Pack4(d, (unsigned char *)slot, PY_LITTLE_ENDIAN)
                              : _PyFloat_Pack2(d, (unsigned char *)slot, PY_LITTLE_ENDIAN);
#endif
        if (r < 0) { PyErr_Clear(); *slot = 0; return 0; } /* out of range: the fallback raises the error */
        return 1;
    }
    default:
        return 0;
    }
}

static int grid_dim(PyObject *o, unsigned *out) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || x < 0 || x > 0xFFFFFFFFLL) { PyErr_Clear(); return 0; }
    *out = (unsigned)x;
    return 1;
}

/* the values the kernel takes, as a list, handed with grid and stream to the Python fallback */
static PyObject *plan_fallback(Plan *p, PyObject *const *args) {
    PyObject *vals = PyList_New(p->n_out);
    if (!vals) return NULL;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < p->n_in; i++) {
        if (p->kinds[i] == K_SKIP) continue;
        Py_INCREF(args[i + 2]);
        PyList_SET_ITEM(vals, j, args[i + 2]);
        j++;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(p->fallback, args[0], args[1], vals, NULL);
    Py_DECREF(vals);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* plan.launch(grid, stream, *values) -> None; values: one per caller position (skipped ones included) */
static PyObject *plan_launch(Plan *p, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != p->n_in + 2) {
        if (nargs < 2) {
            PyErr_SetString(PyExc_TypeError, "launch(grid, stream, *values) needs a grid and a stream");
            return NULL;
        }
        PyErr_Format(PyExc_TypeError, "this launch entry takes %zd values, got %zd", p->n_in, nargs - 2);
        return NULL;
    }
    PyObject *grid = args[0], *stream_o = args[1];
    unsigned g[3] = {1, 1, 1};
    if (PyTuple_CheckExact(grid)) {
        Py_ssize_t n = PyTuple_GET_SIZE(grid);
        if (n < 1 || n > 3) return plan_fallback(p, args);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!grid_dim(PyTuple_GET_ITEM(grid, i), &g[i])) return plan_fallback(p, args);
    } else if (!grid_dim(grid, &g[0])) {
        return plan_fallback(p, args);
    }
    void *stream = NULL;
    if (stream_o != Py_None) {
        if (!PyLong_CheckExact(stream_o)) return plan_fallback(p, args);
        stream = PyLong_AsVoidPtr(stream_o);
        if (!stream && PyErr_Occurred()) { PyErr_Clear(); return plan_fallback(p, args); }
    }
    uint64_t slots[p->n_out ? p->n_out : 1]; /* on the stack: concurrent launches from threads never share it */
    void *ptrs[p->n_out ? p->n_out : 1];
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < p->n_in; i++) {
        int k = p->kinds[i];
        if (k == K_SKIP) continue;
        if (!pack_one(k, args[i + 2], &slots[j])) return plan_fallback(p, args);
        ptrs[j] = &slots[j];
        j++;
    }
    if (!cu_launch && load_driver() < 0) return NULL;
    /* the Launcher's storage mirrors the last launch (Launcher.values(), and the retry in on_error) */
    if (p->n_out) memcpy(p->buf, slots, (size_t)p->n_out * 8);
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = cu_launch(p->function, g[0], g[1], g[2], p->block_x, 1, 1, p->shared, stream, p->n_out ? ptrs : NULL,
                    NULL);
    Py_END_ALLOW_THREADS
    if (err) {
        PyObject *gt = Py_BuildValue("(III)", g[0], g[1], g[2]);
        if (!gt) return NULL;
        PyObject *r = PyObject_CallFunction(p->on_error, "iOO", err, gt, stream_o);
        Py_DECREF(gt);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

/* Plan(function, block_x, shared_bytes, kinds: bytes, buf_address, fallback, on_error, keep) */
static PyObject *plan_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fn_o, *fallback, *on_error, *keep, *buf_o;
    unsigned int block_x, shared;
    const char *kinds;
    Py_ssize_t n_in;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "Plan takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OIIy#OOOO", &fn_o, &block_x, &shared, &kinds, &n_in, &buf_o, &fallback, &on_error,
                          &keep))
        return NULL;
    Py_ssize_t n_out = 0;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        if ((unsigned char)kinds[i] >= K_NKINDS) {
            PyErr_Format(PyExc_ValueError, "unknown parameter kind code %d", kinds[i]);
            return NULL;
        }
        n_out += kinds[i] != K_SKIP;
    }
    if (n_out > MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "a plan takes at most %d parameters", MAX_PARAMS);
        return NULL;
    }
    void *f = PyLong_AsVoidPtr(fn_o);
    void *buf = PyLong_AsVoidPtr(buf_o);
    if (PyErr_Occurred()) return NULL;
    if (n_out && !buf) {
        PyErr_SetString(PyExc_ValueError, "a plan with parameters needs a buffer");
        return NULL;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "fallback and on_error must be callable");
        return NULL;
    }
    Plan *p = (Plan *)type->tp_alloc(type, 0);
    if (!p) return NULL;
    p->kinds = PyMem_Malloc(n_in ? (size_t)n_in : 1);
    if (!p->kinds) { Py_DECREF(p); return PyErr_NoMemory(); }
    memcpy(p->kinds, kinds, (size_t)n_in);
    p->function = f;
    p->block_x = block_x;
    p->shared = shared;
    p->n_in = n_in;
    p->n_out = n_out;
    p->buf = buf;
    Py_INCREF(fallback); p->fallback = fallback;
    Py_INCREF(on_error); p->on_error = on_error;
    Py_INCREF(keep); p->keep = keep;
    return (PyObject *)p;
}

static int plan_traverse(Plan *p, visitproc visit, void *arg) {
    Py_VISIT(p->fallback);
    Py_VISIT(p->on_error);
    Py_VISIT(p->keep);
    return 0;
}

static int plan_clear(Plan *p) {
    Py_CLEAR(p->fallback);
    Py_CLEAR(p->on_error);
    Py_CLEAR(p->keep);
    return 0;
}

static void plan_dealloc(Plan *p) {
    PyObject_GC_UnTrack(p);
    plan_clear(p);
    PyMem_Free(p->kinds);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyMethodDef plan_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))plan_launch, METH_FASTCALL,
     "launch(grid, stream, *values): pack the values and call cuLaunchKernel"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tilefarm_fastlaunch.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Plan(function, block_x, shared_bytes, kinds, buf_address, fallback, on_error, keep)",
    .tp_new = plan_new,
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_traverse = (traverseproc)plan_traverse,
    .tp_clear = (inquiry)plan_clear,
    .tp_methods = plan_methods,
};

/* ---- the jit's dispatcher ---------------------------------------------------------------------------------- */

/* The C half of the launcher that compiler/jit.py generates for one @jit function (see _make_fast_launch). For
 * the common argument kinds it does what the generated Python does, with the same results: read each runtime
 * argument (a torch CUDA tensor: data_ptr() and dtype; a DeviceArray: _ptr and dtype; an int: 1 / int32 /
 * wider; a float), build the same flat specialization key, find the compiled kernel in the same dict, evaluate a
 * callable grid on the same meta dict, and call the kernel's `_tf_entry(grid, stream, *values)`. It returns the
 * kernel, or None when it did not launch (a miss, an argument of another kind, anything odd): the Python code
 * then runs as before, so every such case, and every error message, is the Python path's. Errors raised by
 * the grid function or by the launch itself propagate (they are not retried).
 *
 * `bind(grid)` makes what `kernel[grid]` returns: a Bound, whose call binds the arguments the way the generated
 * launcher's signature does (positional or by name, defaults, num_warps / num_stages / debug / stream) and
 * dispatches, with no Python frame at all; anything else (unknown or duplicate keywords, missing arguments,
 * a dispatch that did not launch) calls the generated Python launcher with the same arguments. */
typedef struct {
    PyObject_HEAD
    PyObject *fast;     /* the key's first element; also marks "no default" in `defaults` */
    PyObject *kernels;  /* flat key -> compiled kernel */
    PyObject *tt;       /* torch.Tensor (or a type no argument has) */
    PyObject *da;       /* DeviceArray */
    PyObject *names;    /* tuple of parameter names (the meta dict of a callable grid) */
    PyObject *defaults; /* tuple: each parameter's default, or `fast` */
    PyObject *fallback; /* the generated Python launcher: fallback(grid, *args, **kwargs) */
    PyObject *num_warps, *num_stages;
    Py_ssize_t n_params, n_rt;
    unsigned char *is_const;
} Dispatcher;

static PyObject *s_is_cuda, *s_data_ptr, *s_dtype, *s_ptr, *s_entry, *s_num_warps, *s_num_stages, *s_debug,
    *s_stream;

/* One runtime argument -> (value, key part, aligned); 1 on success (new references), 0: not handled here. */
static int classify(Dispatcher *d, PyObject *a, PyObject **v, PyObject **k, PyObject **al) {
    PyObject *t = (PyObject *)Py_TYPE(a);
    *v = *k = NULL;
    if (t == d->tt) {
        PyObject *c = PyObject_GetAttr(a, s_is_cuda);
        if (!c) return 0;
        int cuda = PyObject_IsTrue(c);
        Py_DECREF(c);
        if (cuda <= 0) return 0;
        *v = PyObject_CallMethodNoArgs(a, s_data_ptr);
    } else if (t == d->da) {
        *v = PyObject_GetAttr(a, s_ptr);
    } else if (t == (PyObject *)&PyLong_Type) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (x == -1 && PyErr_Occurred()) return 0;
        /* 2: int32, 3: int64, 6: past int64 (a uint64 build; jit.py's _int_handler makes three kinds) */
        long kind = overflow ? 6 : (x == 1 ? 1 : (x >= INT32_MIN && x <= INT32_MAX ? 2 : 3));
        *k = PyLong_FromLong(kind);
        if (!*k) return 0;
        Py_INCREF(a);
        *v = a;
        /* Python's `not a & 15` (two's complement, any size): the low bits of the value */
        *al = PyBool_FromLong(!((overflow ? PyLong_AsUnsignedLongLongMask(a) : (unsigned long long)x) & 15));
        return 1;
    } else if (t == (PyObject *)&PyFloat_Type) {
        *k = PyLong_FromLong(4);
        if (!*k) return 0;
        Py_INCREF(a);
        *v = a;
        Py_INCREF(Py_False);
        *al = Py_False;
        return 1;
    } else {
        return 0;
    }
    /* a pointer: the value must be an int */
    if (!*v || !PyLong_CheckExact(*v)) { Py_CLEAR(*v); return 0; }
    unsigned long long low = PyLong_AsUnsignedLongLongMask(*v);
    if (low == (unsigned long long)-1 && PyErr_Occurred()) { Py_CLEAR(*v); return 0; }
    *k = PyObject_GetAttr(a, s_dtype);
    if (!*k) { Py_CLEAR(*v); return 0; }
    *al = PyBool_FromLong(!(low & 15));
    return 1;
}

/* args: grid, stream, num_warps, num_stages, debug, *params. Returns a new reference to the kernel; NULL with an
 * error set when the grid function or the launch failed; NULL with no error when it did not launch. */
static PyObject *dispatch_impl(Dispatcher *d, PyObject *const *args) {
    PyObject *grid = args[0];
    PyObject *const *params = args + 5;
    Py_ssize_t klen = 1 + 2 * d->n_rt + (d->n_params - d->n_rt) + 3;
    PyObject *key = PyTuple_New(klen);
    if (!key) { PyErr_Clear(); return NULL; }
    PyObject *vals[2 + (d->n_rt ? d->n_rt : 1)];
    Py_ssize_t nv = 0, ki = 0;
    PyObject *result = NULL, *entry = NULL, *g = NULL, *kernel = NULL;
    int handled = 0;
    Py_INCREF(d->fast);
    PyTuple_SET_ITEM(key, ki++, d->fast);
    for (Py_ssize_t i = 0; i < d->n_params; i++) {
        PyObject *a = params[i];
        if (d->is_const[i]) {
            Py_INCREF(a);
            PyTuple_SET_ITEM(key, ki++, a);
            continue;
        }
        PyObject *v, *k, *al;
        if (!classify(d, a, &v, &k, &al)) goto done;
        vals[2 + nv++] = v;
        PyTuple_SET_ITEM(key, ki++, k);
        PyTuple_SET_ITEM(key, ki++, al);
    }
    for (int j = 2; j < 5; j++) {
        Py_INCREF(args[j]);
        PyTuple_SET_ITEM(key, ki++, args[j]);
    }
    kernel = PyDict_GetItemWithError(d->kernels, key); /* borrowed */
    if (!kernel) goto done;                           /* a miss, or an unhashable constexpr */
    Py_INCREF(kernel);
    entry = PyObject_GetAttr(kernel, s_entry);
    if (!entry) goto done;
    handled = 1; /* from here on, errors are the caller's */
    if (PyTuple_CheckExact(grid) || !PyCallable_Check(grid)) {
        Py_INCREF(grid);
        g = grid;
    } else {
        PyObject *meta = PyDict_New();
        if (!meta) goto done;
        for (Py_ssize_t i = 0; i < d->n_params; i++)
            if (PyDict_SetItem(meta, PyTuple_GET_ITEM(d->names, i), params[i]) < 0) { Py_DECREF(meta); goto done; }
        g = PyObject_CallOneArg(grid, meta);
        Py_DECREF(meta);
        if (!g) goto done;
    }
    vals[0] = g;
    vals[1] = args[1];
    PyObject *r = PyObject_Vectorcall(entry, vals, 2 + nv, NULL);
    if (!r) goto done;
    Py_DECREF(r);
    result = kernel;
    kernel = NULL;
done:
    for (Py_ssize_t j = 0; j < nv; j++) Py_DECREF(vals[2 + j]);
    Py_DECREF(key); /* unfilled slots are NULL: the tuple's dealloc skips them */
    Py_XDECREF(entry);
    Py_XDECREF(g);
    Py_XDECREF(kernel);
    if (!result && !handled) PyErr_Clear();
    return result;
}

/* dispatch(grid, stream, num_warps, num_stages, debug, *params) -> kernel, or None when it did not launch */
static int disp_intact(Dispatcher *d) { /* false only after the GC cleared it (tp_clear) */
    return d->fast && d->kernels && d->tt && d->da && d->names && d->defaults && d->num_warps && d->num_stages;
}

static PyObject *disp_dispatch(Dispatcher *d, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 + d->n_params || !disp_intact(d)) Py_RETURN_NONE;
    PyObject *r = dispatch_impl(d, args);
    if (r || PyErr_Occurred()) return r;
    Py_RETURN_NONE;
}

/* ---- Bound: kernel[grid] --------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Dispatcher *d;
    PyObject *grid;
} Bound;

static PyTypeObject BoundType;

static Py_ssize_t param_index(Dispatcher *d, PyObject *name) {
    for (Py_ssize_t i = 0; i < d->n_params; i++)
        if (PyTuple_GET_ITEM(d->names, i) == name) return i;
    for (Py_ssize_t i = 0; i < d->n_params; i++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(d->names, i), name);
        if (eq == 0) return i;
        if (eq == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    }
    return -1;
}

static int same_name(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    int eq = PyUnicode_Compare(a, b);
    if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
    return eq == 0;
}

static PyObject *bound_fallback(Bound *b, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject **full = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
    if (!full) return PyErr_NoMemory();
    full[0] = b->grid ? b->grid : Py_None;
    for (Py_ssize_t i = 0; i < total; i++) full[i + 1] = args[i];
    Dispatcher *d = b->d;
    PyObject *r = d && d->fallback ? PyObject_Vectorcall(d->fallback, full, (size_t)(nargs + 1), kwnames) : NULL;
    if (!r && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "this launch was cleared");
    PyMem_Free(full);
    return r;
}

static PyObject *bound_vectorcall(Bound *b, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Dispatcher *d = b->d;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!d || !b->grid || !d->fallback || !disp_intact(d)) return bound_fallback(b, args, nargsf, kwnames);
    Py_ssize_t n = d->n_params;
    if (nargs > n) return bound_fallback(b, args, nargsf, kwnames);
    PyObject *call[5 + n];
    call[0] = b->grid;
    call[1] = Py_None;
    call[2] = d->num_warps;
    call[3] = d->num_stages;
    call[4] = Py_None;
    for (Py_ssize_t i = 0; i < n; i++) call[5 + i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *val = args[nargs + k];
        Py_ssize_t j = param_index(d, name);
        if (j >= 0) {
            if (call[5 + j]) return bound_fallback(b, args, nargsf, kwnames); /* given twice: Python says so */
            call[5 + j] = val;
        } else if (same_name(name, s_num_warps)) call[2] = val;
        else if (same_name(name, s_num_stages)) call[3] = val;
        else if (same_name(name, s_debug)) call[4] = val;
        else if (same_name(name, s_stream)) call[1] = val;
        else return bound_fallback(b, args, nargsf, kwnames); /* an option the Python path handles, or a typo */
    }
    for (Py_ssize_t j = nargs; j < n; j++) {
        if (call[5 + j]) continue;
        PyObject *dv = PyTuple_GET_ITEM(d->defaults, j);
        if (dv == d->fast) return bound_fallback(b, args, nargsf, kwnames); /* missing: Python says so */
        call[5 + j] = dv;
    }
    PyObject *r = dispatch_impl(d, call);
    if (r || PyErr_Occurred()) return r;
    return bound_fallback(b, args, nargsf, kwnames);
}

static int bound_traverse(Bound *b, visitproc visit, void *arg) {
    Py_VISIT(b->d);
    Py_VISIT(b->grid);
    return 0;
}

static int bound_clear(Bound *b) {
    Py_CLEAR(b->d);
    Py_CLEAR(b->grid);
    return 0;
}

static void bound_dealloc(Bound *b) {
    PyObject_GC_UnTrack(b);
    bound_clear(b);
    PyObject_GC_Del(b);
}

static PyObject *bound_repr(Bound *b) {
    PyObject *fn = b->d && b->d->fallback ? b->d->fallback : Py_None;
    return PyUnicode_FromFormat("<tilefarm launch of %R on grid %R>", fn, b->grid ? b->grid : Py_None);
}

static PyTypeObject BoundType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tilefarm_fastlaunch.Bound",
    .tp_basicsize = sizeof(Bound),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "kernel[grid]: call it with the kernel's arguments to launch",
    .tp_dealloc = (destructor)bound_dealloc,
    .tp_traverse = (traverseproc)bound_traverse,
    .tp_clear = (inquiry)bound_clear,
    .tp_vectorcall_offset = offsetof(Bound, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)bound_repr,
};

/* bind(grid) -> Bound (needs the fallback set) */
static PyObject *disp_bind(Dispatcher *d, PyObject *grid) {
    if (!d->fallback) {
        PyErr_SetString(PyExc_RuntimeError, "Dispatcher.bind needs set_fallback first");
        return NULL;
    }
    Bound *b = PyObject_GC_New(Bound, &BoundType);
    if (!b) return NULL;
    b->vectorcall = (vectorcallfunc)bound_vectorcall;
    Py_INCREF(d);
    b->d = d;
    Py_INCREF(grid);
    b->grid = grid; /* GC-tracked: a grid function may refer back to the Bound (a closure) */
    PyObject_GC_Track(b);
    return (PyObject *)b;
}

static PyObject *disp_set_fallback(Dispatcher *d, PyObject *fn) {
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(d->fallback, fn);
    Py_RETURN_NONE;
}

/* Dispatcher(fast, kernels, tensor_type, device_array_type, names, is_constexpr: bytes, defaults: tuple) */
static PyObject *disp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fast, *kernels, *tt, *da, *names, *defaults;
    const char *is_const;
    Py_ssize_t n;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!OOO!y#O!", &fast, &PyDict_Type, &kernels, &tt, &da, &PyTuple_Type, &names,
                          &is_const, &n, &PyTuple_Type, &defaults))
        return NULL;
    if (PyTuple_GET_SIZE(names) != n || PyTuple_GET_SIZE(defaults) != n) {
        PyErr_SetString(PyExc_ValueError, "names, is_constexpr and defaults differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "parameter names must be str");
            return NULL;
        }
    Py_ssize_t n_rt = 0;
    for (Py_ssize_t i = 0; i < n; i++) n_rt += !is_const[i];
    if (n > 4 * MAX_PARAMS || n_rt > MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "a dispatcher takes at most %d runtime parameters", MAX_PARAMS);
        return NULL;
    }
    Dispatcher *d = (Dispatcher *)type->tp_alloc(type, 0);
    if (!d) return NULL;
    d->is_const = PyMem_Malloc(n ? (size_t)n : 1);
    if (!d->is_const) { Py_DECREF(d); return PyErr_NoMemory(); }
    memcpy(d->is_const, is_const, (size_t)n);
    d->n_params = n;
    d->n_rt = n_rt;
    d->num_warps = PyLong_FromLong(4);
    d->num_stages = PyLong_FromLong(3);
    if (!d->num_warps || !d->num_stages) { Py_DECREF(d); return NULL; }
    Py_INCREF(fast); d->fast = fast;
    Py_INCREF(kernels); d->kernels = kernels;
    Py_INCREF(tt); d->tt = tt;
    Py_INCREF(da); d->da = da;
    Py_INCREF(names); d->names = names;
    Py_INCREF(defaults); d->defaults = defaults;
    return (PyObject *)d;
}

static int disp_traverse(Dispatcher *d, visitproc visit, void *arg) {
    Py_VISIT(d->fast);
    Py_VISIT(d->kernels);
    Py_VISIT(d->tt);
    Py_VISIT(d->da);
    Py_VISIT(d->names);
    Py_VISIT(d->defaults);
    Py_VISIT(d->fallback);
    return 0;
}

static int disp_clear(Dispatcher *d) {
    Py_CLEAR(d->fast);
    Py_CLEAR(d->kernels);
    Py_CLEAR(d->tt);
    Py_CLEAR(d->da);
    Py_CLEAR(d->names);
    Py_CLEAR(d->defaults);
    Py_CLEAR(d->fallback);
    Py_CLEAR(d->num_warps);
    Py_CLEAR(d->num_stages);
    return 0;
}

static void disp_dealloc(Dispatcher *d) {
    PyObject_GC_UnTrack(d);
    disp_clear(d);
    PyMem_Free(d->is_const);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyMethodDef disp_methods[] = {
    {"dispatch", (PyCFunction)(void (*)(void))disp_dispatch, METH_FASTCALL,
     "dispatch(grid, stream, num_warps, num_stages, debug, *params) -> kernel, or None when it did not launch"},
    {"bind", (PyCFunction)disp_bind, METH_O, "bind(grid) -> what kernel[grid] returns"},
    {"set_fallback", (PyCFunction)disp_set_fallback, METH_O,
     "set_fallback(launch): the generated Python launcher, launch(grid, *args, **kwargs)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DispatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tilefarm_fastlaunch.Dispatcher",
    .tp_basicsize = sizeof(Dispatcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Dispatcher(fast, kernels, tensor_type, device_array_type, names, is_constexpr, defaults)",
    .tp_new = disp_new,
    .tp_dealloc = (destructor)disp_dealloc,
    .tp_traverse = (traverseproc)disp_traverse,
    .tp_clear = (inquiry)disp_clear,
    .tp_methods = disp_methods,
};

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "cuLaunchKernel with resolved integers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tilefarm_fastlaunch", NULL, -1, methods, NULL, NULL,
                                     NULL, NULL};

PyMODINIT_FUNC PyInit__tilefarm_fastlaunch(void) {
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&DispatcherType) < 0 || PyType_Ready(&BoundType) < 0)
        return NULL;
    if (!(s_is_cuda = PyUnicode_InternFromString("is_cuda")) || !(s_data_ptr = PyUnicode_InternFromString("data_ptr")) ||
        !(s_dtype = PyUnicode_InternFromString("dtype")) || !(s_ptr = PyUnicode_InternFromString("_ptr")) ||
        !(s_entry = PyUnicode_InternFromString("_tf_entry")) ||
        !(s_num_warps = PyUnicode_InternFromString("num_warps")) ||
        !(s_num_stages = PyUnicode_InternFromString("num_stages")) ||
        !(s_debug = PyUnicode_InternFromString("debug")) || !(s_stream = PyUnicode_InternFromString("stream")))
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&PlanType);
    if (PyModule_AddObject(m, "Plan", (PyObject *)&PlanType) < 0) {
        Py_DECREF(&PlanType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&DispatcherType);
    if (PyModule_AddObject(m, "Dispatcher", (PyObject *)&DispatcherType) < 0) {
        Py_DECREF(&DispatcherType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ABI", 2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
