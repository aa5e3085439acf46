/* A fake libcuda.so.1 for testing compiler.runtime on machines without a GPU.
 *
 * Why: cuda.bindings converts every argument in its own (compiled) code; the only way to check that our
 * calls are spelled the way the real bindings accept them -- and to time the real binding overhead of
 * cuLaunchKernel -- without a GPU is to put a driver under the bindings. This one keeps "device memory"
 * in host memory, runs one known kernel (add_one: y[i] = x[i] + 1 over int32) on the CPU, records the
 * parameters of every launch, gives events wall-clock times, and emulates the error behaviours the
 * runtime must handle: invalid context on a thread without a current context, a sticky illegal-address
 * error after a kernel is given a bad pointer, unknown kernel names, invalid images.
 *
 * Build: gcc -shared -fPIC -O2 -o libcuda.so.1 fake_libcuda.c -ldl -lpthread
 * Use:   LD_LIBRARY_PATH=<dir> python ...   (cuda.pathfinder finds drivers by system search)
 * Env:   FAKE_CUDA_DEVICES=<n> number of devices (default 1).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100, INVALID_DEVICE = 101,
       INVALID_IMAGE = 200, INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500,
       ILLEGAL_ADDRESS = 700 };

static int g_init = 0;
static CUresult g_sticky = OK;
static __thread void *t_ctx = NULL;
static char g_primary_ctx = 0;  /* its address is the context handle */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- allocations ---- */
#define MAXA 65536
static struct { uintptr_t p; size_t n; } g_allocs[MAXA];
static int g_nallocs = 0;

static int valid_range(uintptr_t p, size_t n) {
    int ok = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nallocs; i++)
        if (g_allocs[i].p && p >= g_allocs[i].p && p + n <= g_allocs[i].p + g_allocs[i].n) { ok = 1; break; }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

/* ---- introspection for tests (called through ctypes) ---- */
static uint64_t g_last_params[16];
static unsigned g_last_grid[3], g_last_block[3], g_last_shared;
static uint64_t g_nlaunches = 0;
uint64_t fake_num_launches(void) { return g_nlaunches; }
void fake_last_launch(uint64_t *params16, unsigned *grid3, unsigned *block3, unsigned *shared) {
    memcpy(params16, g_last_params, sizeof g_last_params);
    memcpy(grid3, g_last_grid, sizeof g_last_grid);
    memcpy(block3, g_last_block, sizeof g_last_block);
    *shared = g_last_shared;
}
int fake_num_live_allocs(void) {
    int n = 0;
    for (int i = 0; i < g_nallocs; i++) n += g_allocs[i].p != 0;
    return n;
}

#define NEED_INIT do { if (!g_init) return NOT_INITIALIZED; } while (0)
#define NEED_CTX do { NEED_INIT; if (!t_ctx) return INVALID_CONTEXT; if (g_sticky) return g_sticky; } while (0)

static int num_devices(void) { const char *e = getenv("FAKE_CUDA_DEVICES"); return e ? atoi(e) : 1; }

CUresult cuInit(unsigned flags) { (void)flags; g_init = 1; return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { NEED_INIT; *n = num_devices(); return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    NEED_INIT;
    if (ordinal < 0 || ordinal >= num_devices()) return INVALID_DEVICE;
    *d = ordinal; return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    (void)d; NEED_INIT; strncpy(name, "Fake GPU (tilefarm stub)", (size_t)len); return OK;
}
typedef struct { char bytes[16]; } CUuuid;
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
    NEED_INIT; for (int i = 0; i < 16; i++) u->bytes[i] = (char)(i * 17 + d); return OK;
}
CUresult cuDeviceTotalMem(size_t *b, CUdevice d) { (void)d; NEED_INIT; *b = (size_t)141 << 30; return OK; }
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    (void)d; NEED_INIT;
    switch (attr) {
    case 75: *v = 9; break;            /* cc major */
    case 76: *v = 0; break;            /* cc minor */
    case 16: *v = 132; break;          /* SMs */
    case 38: *v = 4 << 20; break;      /* L2: small, so the bench's flush buffer stays small here */
    case 8: *v = 49152; break;
    case 97: *v = 232448; break;       /* smem optin */
    case 1: *v = 1024; break;
    case 10: *v = 32; break;
    case 13: *v = 1980000; break;
    case 36: *v = 2619000; break;
    case 37: *v = 6144; break;
    default: *v = 0;
    }
    return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) { (void)d; NEED_INIT; *ctx = &g_primary_ctx; return OK; }
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { NEED_INIT; t_ctx = ctx; return OK; }
CUresult cuCtxGetCurrent(void **ctx) { NEED_INIT; *ctx = t_ctx; return OK; }
CUresult cuCtxSynchronize(void) { NEED_INIT; if (!t_ctx) return INVALID_CONTEXT; return g_sticky; }
CUresult cuStreamSynchronize(void *s) { (void)s; return cuCtxSynchronize(); }

static const char *err_name(int e) {
    switch (e) {
    case OK: return "CUDA_SUCCESS"; case INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED"; case NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE"; case INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT"; case INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case NOT_FOUND: return "CUDA_ERROR_NOT_FOUND"; case ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    default: return NULL;
    }
}
static const char *err_string(int e) {
    switch (e) {
    case OK: return "no error"; case INVALID_VALUE: return "invalid argument";
    case INVALID_CONTEXT: return "invalid device context"; case NOT_FOUND: return "named symbol not found";
    case ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case INVALID_IMAGE: return "device kernel image is invalid";
    default: return NULL;
    }
}
CUresult cuGetErrorName(int e, const char **s) { *s = err_name(e); return *s ? OK : INVALID_VALUE; }
CUresult cuGetErrorString(int e, const char **s) { *s = err_string(e); return *s ? OK : INVALID_VALUE; }

/* ---- memory ---- */
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
    NEED_CTX;
    if (n == 0) return INVALID_VALUE;
    void *m = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!m) return 2;
    pthread_mutex_lock(&g_lock);
    int slot = -1;
    for (int i = 0; i < g_nallocs; i++) if (!g_allocs[i].p) { slot = i; break; }
    if (slot < 0) slot = g_nallocs++;
    g_allocs[slot].p = (uintptr_t)m; g_allocs[slot].n = n;
    pthread_mutex_unlock(&g_lock);
    *p = (CUdeviceptr)(uintptr_t)m;
    return OK;
}
CUresult cuMemFree(CUdeviceptr p) {
    NEED_INIT; if (!t_ctx) return INVALID_CONTEXT;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nallocs; i++)
        if (g_allocs[i].p == p) { free((void *)(uintptr_t)p); g_allocs[i].p = 0; pthread_mutex_unlock(&g_lock); return OK; }
    pthread_mutex_unlock(&g_lock);
    return INVALID_VALUE;
}
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
    NEED_CTX; if (!valid_range(dst, n)) return INVALID_VALUE; memcpy((void *)(uintptr_t)dst, src, n); return OK;
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
    NEED_CTX; if (!valid_range(src, n)) return INVALID_VALUE; memcpy(dst, (void *)(uintptr_t)src, n); return OK;
}
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    NEED_CTX; if (!valid_range(src, n) || !valid_range(dst, n)) return INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n); return OK;
}
CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
    NEED_CTX; if (!valid_range(d, n)) return INVALID_VALUE; memset((void *)(uintptr_t)d, v, n); return OK;
}
CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) {
    NEED_CTX; if (!valid_range(d, 2 * n)) return INVALID_VALUE;
    for (size_t i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v;
    return OK;
}
CUresult cuMemsetD32(CUdeviceptr d, unsigned v, size_t n) {
    NEED_CTX; if (!valid_range(d, 4 * n)) return INVALID_VALUE;
    for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
    return OK;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) { (void)s; return cuMemsetD32(d, v, n); }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) { (void)s; return cuMemsetD8(d, v, n); }

/* ---- modules ---- */
typedef struct { char *image; int is_ptx; } Mod;
typedef struct { Mod *mod; char name[128]; } Fn;
CUresult cuModuleLoadData(void **m, const void *image) {
    NEED_CTX;
    if (!image) return INVALID_VALUE;
    const unsigned char *b = image;
    Mod *mod = calloc(1, sizeof *mod);
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') { mod->is_ptx = 0; }
    else {
        if (!strstr((const char *)image, ".entry")) { free(mod); return INVALID_IMAGE; }
        mod->is_ptx = 1; mod->image = strdup((const char *)image);
    }
    *m = mod; return OK;
}
CUresult cuModuleUnload(void *m) { Mod *mod = m; if (mod) { free(mod->image); free(mod); } return OK; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    NEED_CTX;
    Mod *mod = m;
    if (!mod) return INVALID_HANDLE;
    if (mod->is_ptx) {
        char pat[160]; snprintf(pat, sizeof pat, ".entry %s", name);
        if (!strstr(mod->image, pat)) return NOT_FOUND;
    }
    Fn *fn = calloc(1, sizeof *fn); fn->mod = mod; strncpy(fn->name, name, 127);
    *f = fn; return OK;
}
CUresult cuFuncSetAttribute(void *f, int attr, int v) { (void)attr; (void)v; NEED_CTX; return f ? OK : INVALID_HANDLE; }
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
    NEED_CTX; if (!f) return INVALID_HANDLE;
    *v = attr == 0 ? 1024 : (attr == 4 ? 16 : 0); return OK;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
    (void)stream; (void)extra;
    NEED_CTX;
    Fn *fn = f;
    if (!fn) return INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || bx * by * bz > 1024) return INVALID_VALUE;
    g_nlaunches++;
    g_last_grid[0] = gx; g_last_grid[1] = gy; g_last_grid[2] = gz;
    g_last_block[0] = bx; g_last_block[1] = by; g_last_block[2] = bz;
    g_last_shared = shared;
    if (!strcmp(fn->name, "add_one")) {            /* add_one(const int *x, int *y, int n) */
        int *x = *(int **)params[0], *y = *(int **)params[1];
        int n = *(int *)params[2];
        size_t threads = (size_t)gx * bx;
        size_t m = (size_t)n < threads ? (size_t)n : threads;
        if (m && (!valid_range((uintptr_t)x, 4 * m) || !valid_range((uintptr_t)y, 4 * m))) {
            g_sticky = ILLEGAL_ADDRESS;            /* as on a GPU: reported later, and sticky */
            return OK;
        }
        for (size_t i = 0; i < m; i++) y[i] = x[i] + 1;
    } else if (params && !strncmp(fn->name, "params", 6)) {
        /* kernel "paramsN": record the 8-byte slot of each of its N params (our launcher's slot width) */
        int n = atoi(fn->name + 6);
        for (int i = 0; i < n && i < 16; i++) memcpy(&g_last_params[i], params[i], 8);
    }
    return OK;
}

/* ---- events and streams ---- */
static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; NEED_CTX; *e = calloc(1, sizeof(double)); return OK; }
CUresult cuEventDestroy(void *e) { free(e); return OK; }
CUresult cuEventRecord(void *e, void *s) { (void)s; NEED_CTX; *(double *)e = now_ms(); return OK; }
CUresult cuEventSynchronize(void *e) { (void)e; NEED_INIT; return g_sticky; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { NEED_INIT; *ms = (float)(*(double *)b - *(double *)a); return OK; }
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; NEED_CTX; *s = calloc(1, 8); return OK; }
CUresult cuStreamDestroy(void *s) { free(s); return OK; }

/* ---- the loader entry point cuda.bindings uses for everything ---- */
#define E(n) { #n, (void *)n }
static const struct { const char *name; void *fn; } g_table[] = {
    E(cuInit), E(cuDriverGetVersion), E(cuDeviceGetCount), E(cuDeviceGet), E(cuDeviceGetName),
    E(cuDeviceGetUuid), E(cuDeviceTotalMem), E(cuDeviceGetAttribute), E(cuDevicePrimaryCtxRetain),
    E(cuDevicePrimaryCtxRelease), E(cuCtxSetCurrent), E(cuCtxGetCurrent), E(cuCtxSynchronize),
    E(cuStreamSynchronize), E(cuGetErrorName), E(cuGetErrorString), E(cuMemAlloc), E(cuMemFree),
    E(cuMemcpyHtoD), E(cuMemcpyDtoH), E(cuMemcpyDtoD), E(cuMemsetD8), E(cuMemsetD16), E(cuMemsetD32),
    E(cuMemsetD32Async), E(cuMemsetD8Async), E(cuModuleLoadData), E(cuModuleUnload), E(cuModuleGetFunction),
    E(cuFuncSetAttribute), E(cuFuncGetAttribute), E(cuLaunchKernel), E(cuEventCreate), E(cuEventDestroy),
    E(cuEventRecord), E(cuEventSynchronize), E(cuEventElapsedTime), E(cuStreamCreate), E(cuStreamDestroy),
};
static void *lookup(const char *symbol) {
    for (size_t i = 0; i < sizeof g_table / sizeof g_table[0]; i++)
        if (!strcmp(g_table[i].name, symbol)) return g_table[i].fn;
    return NULL;
}
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status) {
    (void)version; (void)flags;
    *pfn = lookup(symbol);
    if (status) *status = *pfn ? 0 : 1;  /* CU_GET_PROC_ADDRESS_SUCCESS / SYMBOL_NOT_FOUND */
    return *pfn ? OK : NOT_FOUND;
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
