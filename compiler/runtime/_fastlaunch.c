/* A direct call into cuLaunchKernel for the launch path.
 *
 * Why: going through cuda.bindings converts eleven Python arguments to C in generic code on every launch,
 * which costs as much as the driver call itself. This module takes the already-resolved integers
 * (function handle, grid, block, shared bytes, stream, address of the packed parameter array) and calls the
 * driver once. libcuda is opened on first use, so the module imports on machines without a GPU.
 * Built at run time by compiler/runtime/fastlaunch.py with the system C compiler; when it cannot be built,
 * the launch path keeps using cuda.bindings.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

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

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "cuLaunchKernel with resolved integers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tilefarm_fastlaunch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tilefarm_fastlaunch(void) { return PyModule_Create(&module); }
