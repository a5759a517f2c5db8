/*
 * ocl.c — the OpenCL host driver (ocl.h): device discovery, the program
 * built from the embedded sources (ocl_sources.c, generated from the .cl
 * files by CMake) or loaded from the binary cache, buffers, and the
 * enqueueing of each kernel with its work sizes.
 */

#include "ocl.h"
#include "ocl_impl.h"
#include "quant.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char pt_ocl_source[]; /* every .cl file of CMakeLists.txt's list in one string */

static const char *const kernel_names[K_COUNT] = {
    "mm_q4_0_1", "mm_q4_0_n", "mm_q4_0_r", "mm_q4_1_1", "mm_q4_1_n", "mm_q4_1_r", "mm_q5_0_1",
    "mm_q5_0_n", "mm_q5_0_r", "mm_q5_1_1", "mm_q5_1_n", "mm_q5_1_r", "mm_q8_0_1", "mm_q8_0_n",
    "mm_q8_0_r", "mm_f32_1",  "mm_f32_n",  "mm_f32_r",  "mm_f16_1",  "mm_f16_n",  "mm_f16_r",
    "mm_bf16_1", "mm_bf16_n", "mm_bf16_r", "mm_q4_k_1", "mm_q4_k_n", "mm_q4_k_r", "mm_q5_k_1",
    "mm_q5_k_n", "mm_q5_k_r", "mm_q6_k_1", "mm_q6_k_n", "mm_q6_k_r", "mm_q4_0_g", "mm_q4_1_g",
    "mm_q5_0_g", "mm_q5_1_g", "mm_q8_0_g", "mm_f32_g",  "mm_f16_g",  "mm_bf16_g", "mm_q4_k_g",
    "mm_q5_k_g", "mm_q6_k_g", "mm_q4_0_glu", "mm_q4_1_glu", "mm_q5_0_glu", "mm_q5_1_glu", "mm_q8_0_glu",
    "rmsnorm",   "add",       "add_bias",  "rope",
    "act_mul",   "softmax",   "attention", "attention_tq", "rope_store", "im2col_hwc", "upsample2x", "concat",
    "groupnorm", "layernorm", "geglu",     "act",       "add_image",  "mha",
    "groupnorm_part", "groupnorm_stats", "mha_t12", "mha_t16", "mha_t20", "mha_t40"};

static void set_err(char *err, size_t cap, const char *fmt, ...) {
    if (!err || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

void pt_ocl_set_error(pt_ocl *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
}

static int fail(pt_ocl *o, int st, const char *what) {
    set_err(o->err, sizeof o->err, "OpenCL %s failed (status %d)", what, st);
    return st ? st : -1;
}

/* ---- devices ------------------------------------------------------------ */

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

/* Every (platform, device) pair, in order; returns the count or a negative status. */
static int all_devices(cl_platform_id *plat, cl_device_id *dev, int cap, char *err, size_t err_cap) {
    cl_uint np = 0;
    cl_platform_id ps[MAX_PLATFORMS];
    cl_int st = clGetPlatformIDs(MAX_PLATFORMS, ps, &np);
    if (st != CL_SUCCESS || np == 0) {
        set_err(err, err_cap, "no OpenCL platform found (status %d)", st == CL_SUCCESS ? 0 : st);
        return st != CL_SUCCESS ? st : CL_INVALID_PLATFORM;
    }
    if (np > MAX_PLATFORMS) np = MAX_PLATFORMS;
    int n = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        cl_device_id ds[MAX_DEVICES];
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ds, &nd) != CL_SUCCESS) continue;
        if (nd > MAX_DEVICES) nd = MAX_DEVICES;
        for (cl_uint d = 0; d < nd && n < cap; d++, n++) {
            plat[n] = ps[p];
            dev[n] = ds[d];
        }
    }
    return n;
}

static void describe(cl_platform_id p, cl_device_id d, pt_ocl_device_info *out) {
    memset(out, 0, sizeof *out);
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof out->platform - 1, out->platform, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof out->name - 1, out->name, NULL);
    clGetDeviceInfo(d, CL_DEVICE_VERSION, sizeof out->version - 1, out->version, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof out->driver - 1, out->driver, NULL);
    cl_ulong u = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof u, &u, NULL) == CL_SUCCESS) out->global_mem = u;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof u, &u, NULL) == CL_SUCCESS) out->max_alloc = u;
    if (clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof u, &u, NULL) == CL_SUCCESS) out->local_mem = u;
    cl_uint cu = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) == CL_SUCCESS)
        out->compute_units = (int)cu;
    cl_device_type type = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS)
        out->cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    cl_bool um = CL_FALSE;
    if (clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof um, &um, NULL) == CL_SUCCESS)
        out->unified_memory = um == CL_TRUE;
    cl_uint bits = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL) == CL_SUCCESS)
        out->base_align = bits / 8;
    /* the extension list can be long: read it whole, keep what fits */
    size_t len = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &len) == CL_SUCCESS && len) {
        char *ext = malloc(len + 1);
        if (ext && clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
            ext[len] = 0;
            out->int_dot = strstr(ext, "cl_khr_integer_dot_product") ||
                           strstr(ext, "cl_arm_integer_dot_product");
            out->subgroups = strstr(ext, "cl_khr_subgroups") || strstr(ext, "cl_intel_subgroups");
            snprintf(out->extensions, sizeof out->extensions, "%s", ext);
        }
        free(ext);
    }
}

int pt_ocl_devices(pt_ocl_device_info *out, int cap, char *err, size_t err_cap) {
    cl_platform_id plat[MAX_DEVICES];
    cl_device_id dev[MAX_DEVICES];
    const int n = all_devices(plat, dev, MAX_DEVICES, err, err_cap);
    for (int i = 0; i < n && i < cap; i++) describe(plat[i], dev[i], &out[i]);
    return n;
}

/* ---- program and its binary cache -------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator, so "ab"+"c" != "a"+"bc" */
}

/* mkdir -p */
static bool make_dirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

/* The cache file of this source, options, device and driver: one file per
 * combination, so a driver update or a changed kernel builds anew. */
static uint64_t device_hash(const pt_ocl *o, const char *opts) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, pt_ocl_source);
    if (opts) h = fnv1a(h, opts);
    h = fnv1a(h, o->info.platform);
    h = fnv1a(h, o->info.name);
    h = fnv1a(h, o->info.version);
    h = fnv1a(h, o->info.driver);
    return h;
}

static void cache_path(const pt_ocl *o, const char *dir, const char *opts, char *out, size_t cap) {
    snprintf(out, cap, "%s/%016llx.bin", dir, (unsigned long long)device_hash(o, opts));
}

void pt_ocl_device_key(const pt_ocl *o, char *out, size_t cap) {
    snprintf(out, cap, "%016llx", (unsigned long long)device_hash(o, NULL));
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
            fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = n > 0 ? (size_t)n : 0;
    }
    fclose(f);
    return buf;
}

/* Write the built program's binary to path (through a temporary file and
 * a rename, so a reader never sees half a file). Failures are ignored:
 * the cache only saves time. */
static void save_binary(pt_ocl *o, const char *path) {
    size_t len = 0;
    if (clGetProgramInfo(o->program, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        !len)
        return;
    unsigned char *bin = malloc(len);
    if (!bin) return;
    unsigned char *bins[1] = {bin};
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = NULL;
    if (clGetProgramInfo(o->program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS &&
        (f = fopen(tmp, "wb"))) {
        const bool ok = fwrite(bin, 1, len, f) == len;
        if (fclose(f) == 0 && ok)
            rename(tmp, path);
        else
            remove(tmp);
    }
    free(bin);
}

static int build(pt_ocl *o, const char *opts) {
    const cl_int st = clBuildProgram(o->program, 1, &o->device, opts, NULL, NULL);
    if (st == CL_SUCCESS) return 0;
    char log[300] = "";
    clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    for (char *p = log; *p; p++)
        if (*p == '\n') *p = ' ';
    set_err(o->err, sizeof o->err, "OpenCL program build failed (status %d): %s", st, log);
    return st;
}

static int make_program(pt_ocl *o, const char *cache_dir) {
    char opts[384];
    snprintf(opts, sizeof opts,
             "-DMM_WG=%d -DMM_NR=%d -DMM_NT=%d -DOPS_WG=%d -DRMS_WG=%d -DATT_WG=%d -DATT_TQ=%d -DGEMM_M=%d "
             "-DGEMM_N=%d -DVEC_NR=%d -DMHA_TQ=%d -DMHA_TK=%d -DMHA_TP=%d",
             MM_WG, MM_NR, MM_NT, OPS_WG, RMS_WG, ATT_WG, ATT_TQ, o->gemm_m, o->gemm_n, o->vec_nr, MHA_TQ, MHA_TK,
             MHA_TP);
    char path[4200] = "";
    if (cache_dir && *cache_dir && make_dirs(cache_dir)) {
        cache_path(o, cache_dir, opts, path, sizeof path);
        size_t len = 0;
        unsigned char *bin = read_file(path, &len);
        if (bin) {
            cl_int st, bst;
            const unsigned char *bins[1] = {bin};
            o->program = clCreateProgramWithBinary(o->ctx, 1, &o->device, &len, bins, &bst, &st);
            free(bin);
            if (st == CL_SUCCESS && bst == CL_SUCCESS && build(o, opts) == 0) {
                o->from_cache = true;
                return 0;
            }
            /* a stale or foreign file: build from the source */
            if (o->program) clReleaseProgram(o->program);
            o->program = NULL;
        }
    }
    cl_int st;
    const char *src = pt_ocl_source;
    o->program = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &st);
    if (st != CL_SUCCESS) return fail(o, st, "clCreateProgramWithSource");
    if ((st = build(o, opts)) != 0) return st;
    if (*path) save_binary(o, path);
    return 0;
}

pt_ocl *pt_ocl_open(int index, const char *cache_dir, char *err, size_t err_cap) {
    cl_platform_id plat[MAX_DEVICES];
    cl_device_id dev[MAX_DEVICES];
    const int n = all_devices(plat, dev, MAX_DEVICES, err, err_cap);
    if (n < 0) return NULL;
    if (index < 0 || index >= n) {
        set_err(err, err_cap, "no OpenCL device %d (%d found)", index, n);
        return NULL;
    }
    pt_ocl *o = calloc(1, sizeof *o);
    if (!o) {
        set_err(err, err_cap, "out of memory opening the OpenCL device");
        return NULL;
    }
    o->platform = plat[index];
    o->device = dev[index];
    describe(o->platform, o->device, &o->info);
    o->cpu = o->info.cpu;
    cl_int st;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)o->platform, 0};
    o->ctx = clCreateContext(props, 1, &o->device, NULL, NULL, &st);
    const char *mha = getenv("PETREL_OCL_MHA");
    o->mha_tiled = mha && *mha ? strcmp(mha, "tiled") == 0 : o->info.cpu;
    const char *prof = getenv("PETREL_OCL_PROFILE");
    if (prof && *prof) snprintf(o->prof_path, sizeof o->prof_path, "%s", prof);
    if (st == CL_SUCCESS)
        o->queue = clCreateCommandQueue(o->ctx, o->device, *o->prof_path ? CL_QUEUE_PROFILING_ENABLE : 0, &st);
    if (st != CL_SUCCESS) fail(o, st, "context creation");
    if (cache_dir && *cache_dir) snprintf(o->cache_dir, sizeof o->cache_dir, "%s", cache_dir);
    /* GPUs with a cache: the work sizes timed on this device (at first
     * use, then read from the tuning file; pt_ocl_tune builds the program
     * with them); else, or if that fails, the defaults */
    const bool tuned = st == CL_SUCCESS && !o->cpu && *o->cache_dir &&
                       pt_ocl_tune(o, GEMM_TUNE_ROWS, GEMM_TUNE_COLS, GEMM_TUNE_N, 0, false) == 0;
    if (st == CL_SUCCESS && !tuned && pt_ocl_rebuild(o, GEMM_TILE, GEMM_TILE, VEC_NR_DEFAULT) != 0)
        st = CL_BUILD_PROGRAM_FAILURE;
    if (st != CL_SUCCESS) {
        set_err(err, err_cap, "%s: %s", o->info.name, o->err);
        pt_ocl_close(o);
        return NULL;
    }
    return o;
}

static void release_program(pt_ocl *o) {
    for (int i = 0; i < K_COUNT; i++) {
        if (o->k[i]) clReleaseKernel(o->k[i]);
        o->k[i] = NULL;
    }
    if (o->program) clReleaseProgram(o->program);
    o->program = NULL;
}

int pt_ocl_rebuild(pt_ocl *o, int gemm_m, int gemm_n, int vec_nr) {
    release_program(o);
    o->gemm_m = gemm_m;
    o->gemm_n = gemm_n;
    o->vec_nr = vec_nr;
    o->from_cache = false;
    if (make_program(o, *o->cache_dir ? o->cache_dir : NULL) != 0) return CL_BUILD_PROGRAM_FAILURE;
    cl_int st = CL_SUCCESS;
    for (int i = 0; i < K_COUNT && st == CL_SUCCESS; i++) {
        o->k[i] = clCreateKernel(o->program, kernel_names[i], &st);
        if (st != CL_SUCCESS) return fail(o, st, kernel_names[i]);
    }
    /* a kernel heavy in registers may not run 256 items per group (some
     * mobile GPUs): then long prompts take the _n kernels */
    o->gemm = true;
    for (int i = K_Q4_0_G; i <= K_Q6_K_G; i++)
        if (pt_ocl_kernel_wg(o, i) < GEMM_WG) o->gemm = false;
    return 0;
}

int pt_ocl_set_gemm_tile(pt_ocl *o, int rows, int tokens) {
    if ((rows != 64 && rows != 128) || (tokens != 64 && tokens != 128)) {
        set_err(o->err, sizeof o->err, "no gemm tile of %d x %d", rows, tokens);
        return -1;
    }
    return pt_ocl_rebuild(o, rows, tokens, o->vec_nr);
}

int pt_ocl_set_vec_rows(pt_ocl *o, int rows) {
    if (rows != 1 && rows != 2 && rows != 4) {
        set_err(o->err, sizeof o->err, "no decode product of %d rows a group", rows);
        return -1;
    }
    return pt_ocl_rebuild(o, o->gemm_m, o->gemm_n, rows);
}

int pt_ocl_vec_rows(const pt_ocl *o) { return o->vec_nr; }

void pt_ocl_gemm_tile(const pt_ocl *o, int *rows, int *tokens, bool *from_file) {
    *rows = o->gemm_m;
    *tokens = o->gemm_n;
    if (from_file) *from_file = o->tuned_from_file;
}

/* Append "kernel launches total_ms mean_us" lines for the kernels that ran. */
static void write_profile(const pt_ocl *o) {
    FILE *f = fopen(o->prof_path, "a");
    if (!f) return;
    fprintf(f, "# %s\n", o->info.name);
    for (int i = 0; i < K_COUNT; i++)
        if (o->prof_n[i])
            fprintf(f, "%-12s %8llu %10.3f %9.2f\n", kernel_names[i], (unsigned long long)o->prof_n[i],
                    o->prof_ns[i] / 1e6, o->prof_ns[i] / 1e3 / (double)o->prof_n[i]);
    fclose(f);
}

void pt_ocl_close(pt_ocl *o) {
    if (!o) return;
    if (o->queue) clFinish(o->queue);
    if (*o->prof_path) write_profile(o);
    if (o->scratch) clReleaseMemObject(o->scratch);
    release_program(o);
    if (o->queue) clReleaseCommandQueue(o->queue);
    if (o->ctx) clReleaseContext(o->ctx);
    free(o);
}

const char *pt_ocl_error(const pt_ocl *o) { return o->err; }
const pt_ocl_device_info *pt_ocl_info(const pt_ocl *o) { return &o->info; }
bool pt_ocl_from_cache(const pt_ocl *o) { return o->from_cache; }
void pt_ocl_use_group_kernels(pt_ocl *o, bool group) { o->cpu = !group && o->info.cpu; }

/* ---- buffers ------------------------------------------------------------ */

pt_ocl_mem *pt_ocl_scratch(pt_ocl *o, size_t bytes) {
    if (o->scratch && o->scratch_bytes >= bytes) return (pt_ocl_mem *)o->scratch;
    if (o->scratch) clReleaseMemObject(o->scratch); /* freed once the queued kernels are done */
    o->scratch = NULL;
    o->scratch_bytes = 0;
    bytes = bytes < 4096 ? 4096 : bytes;
    cl_int st;
    o->scratch = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, bytes, NULL, &st);
    if (st != CL_SUCCESS) {
        o->scratch = NULL;
        set_err(o->err, sizeof o->err, "OpenCL scratch buffer of %zu bytes failed (status %d)", bytes, st);
        return NULL;
    }
    o->scratch_bytes = bytes;
    return (pt_ocl_mem *)o->scratch;
}

size_t pt_ocl_kernel_wg(pt_ocl *o, int k) {
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(o->k[k], o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
        CL_SUCCESS)
        return 0;
    return wg;
}

pt_ocl_mem *pt_ocl_alloc(pt_ocl *o, size_t bytes, const void *init, bool host) {
    cl_int st;
    if (!bytes) bytes = 4; /* OpenCL refuses empty buffers */
    cl_mem m;
    if (init && host) {
        m = clCreateBuffer(o->ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes, (void *)init, &st);
    } else {
        m = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, bytes, NULL, &st);
        if (st == CL_SUCCESS) {
            if (init) {
                st = clEnqueueWriteBuffer(o->queue, m, CL_TRUE, 0, bytes, init, 0, NULL, NULL);
            } else {
                const float zero = 0.0f;
                st = clEnqueueFillBuffer(o->queue, m, &zero, sizeof zero, 0, bytes / 4 * 4, 0, NULL, NULL);
            }
            if (st != CL_SUCCESS) clReleaseMemObject(m);
        }
    }
    if (st != CL_SUCCESS) {
        set_err(o->err, sizeof o->err, "OpenCL buffer of %zu bytes failed (status %d)", bytes, st);
        return NULL;
    }
    return (pt_ocl_mem *)m;
}

void pt_ocl_free(pt_ocl_mem *m) {
    if (m) clReleaseMemObject((cl_mem)m);
}

pt_ocl_mem *pt_ocl_sub(pt_ocl *o, pt_ocl_mem *m, size_t off, size_t bytes) {
    const cl_buffer_region r = {off, bytes};
    cl_int st;
    cl_mem s = clCreateSubBuffer((cl_mem)m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &st);
    if (st != CL_SUCCESS) {
        set_err(o->err, sizeof o->err, "OpenCL sub-buffer of %zu bytes at %zu failed (status %d)",
                bytes, off, st);
        return NULL;
    }
    return (pt_ocl_mem *)s;
}

int pt_ocl_write(pt_ocl *o, pt_ocl_mem *m, size_t off, const void *src, size_t bytes) {
    const cl_int st = clEnqueueWriteBuffer(o->queue, (cl_mem)m, CL_TRUE, off, bytes, src, 0, NULL, NULL);
    return st == CL_SUCCESS ? 0 : fail(o, st, "write");
}

int pt_ocl_read(pt_ocl *o, pt_ocl_mem *m, size_t off, void *dst, size_t bytes) {
    const cl_int st = clEnqueueReadBuffer(o->queue, (cl_mem)m, CL_TRUE, off, bytes, dst, 0, NULL, NULL);
    return st == CL_SUCCESS ? 0 : fail(o, st, "read");
}

int pt_ocl_copy(pt_ocl *o, pt_ocl_mem *dst, size_t dst_off, pt_ocl_mem *src, size_t src_off,
                size_t bytes) {
    const cl_int st =
        clEnqueueCopyBuffer(o->queue, (cl_mem)src, (cl_mem)dst, src_off, dst_off, bytes, 0, NULL, NULL);
    return st == CL_SUCCESS ? 0 : fail(o, st, "copy");
}

int pt_ocl_finish(pt_ocl *o) {
    const cl_int st = clFinish(o->queue);
    return st == CL_SUCCESS ? 0 : fail(o, st, "finish");
}

/* ---- kernels ------------------------------------------------------------ */

int pt_ocl_launch(pt_ocl *o, int k, int dims, const size_t *global, const size_t *local, int n_args,
                  ...) {
    va_list ap;
    va_start(ap, n_args);
    cl_int st = CL_SUCCESS;
    for (int i = 0; i < n_args && st == CL_SUCCESS; i++) {
        const size_t size = va_arg(ap, size_t);
        const void *val = va_arg(ap, const void *);
        st = clSetKernelArg(o->k[k], (cl_uint)i, size, val);
    }
    va_end(ap);
    cl_event ev = NULL;
    if (st == CL_SUCCESS)
        st = clEnqueueNDRangeKernel(o->queue, o->k[k], (cl_uint)dims, NULL, global, local, 0, NULL,
                                    *o->prof_path ? &ev : NULL);
    if (ev) {
        cl_ulong t0 = 0, t1 = 0;
        if (clWaitForEvents(1, &ev) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS &&
            t1 >= t0) {
            o->prof_ns[k] += t1 - t0;
            o->prof_n[k]++;
        }
        clReleaseEvent(ev);
    }
    return st == CL_SUCCESS ? 0 : fail(o, st, kernel_names[k]);
}


bool pt_ocl_has_type(uint32_t type) {
    return type == PT_TYPE_Q4_0 || type == PT_TYPE_Q4_1 || type == PT_TYPE_Q5_0 ||
           type == PT_TYPE_Q5_1 || type == PT_TYPE_Q8_0 || type == PT_TYPE_F32 ||
           type == PT_TYPE_F16 || type == PT_TYPE_BF16 || type == PT_TYPE_Q4_K ||
           type == PT_TYPE_Q5_K || type == PT_TYPE_Q6_K;
}

int pt_ocl_matmul(pt_ocl *o, uint32_t type, pt_ocl_mem *w, int64_t rows, int64_t cols,
                  pt_ocl_mem *x, int n, pt_ocl_mem *y) {
    int k, g;
    switch (type) {
    case PT_TYPE_Q4_0: k = K_Q4_0_1; break;
    case PT_TYPE_Q4_1: k = K_Q4_1_1; break;
    case PT_TYPE_Q5_0: k = K_Q5_0_1; break;
    case PT_TYPE_Q5_1: k = K_Q5_1_1; break;
    case PT_TYPE_Q8_0: k = K_Q8_0_1; break;
    case PT_TYPE_BF16: k = K_BF16_1; break;
    case PT_TYPE_Q4_K: k = K_Q4_K_1; break;
    case PT_TYPE_Q5_K: k = K_Q5_K_1; break;
    case PT_TYPE_Q6_K: k = K_Q6_K_1; break;
    case PT_TYPE_F32: k = K_F32_1; break;
    case PT_TYPE_F16: k = K_F16_1; break;
    default:
        set_err(o->err, sizeof o->err, "OpenCL has no matmul for type %s", pt_type_name(type));
        return -1;
    }
    if (n <= 0 || rows <= 0) return 0;
    const cl_mem wm = (cl_mem)w, xm = (cl_mem)x, ym = (cl_mem)y;
    const cl_ulong rb = pt_type_row_bytes(type, cols);
    const cl_int r = (cl_int)rows, c = (cl_int)cols, nn = n;
    switch (type) {
    case PT_TYPE_Q4_0: g = K_Q4_0_G; break;
    case PT_TYPE_Q4_1: g = K_Q4_1_G; break;
    case PT_TYPE_Q5_0: g = K_Q5_0_G; break;
    case PT_TYPE_Q5_1: g = K_Q5_1_G; break;
    case PT_TYPE_Q8_0: g = K_Q8_0_G; break;
    case PT_TYPE_F32: g = K_F32_G; break;
    case PT_TYPE_F16: g = K_F16_G; break;
    case PT_TYPE_BF16: g = K_BF16_G; break;
    case PT_TYPE_Q4_K: g = K_Q4_K_G; break;
    case PT_TYPE_Q5_K: g = K_Q5_K_G; break;
    default: g = K_Q6_K_G; break;
    }
    if (!o->cpu && o->gemm && n >= GEMM_MIN_N) {
        const size_t global[2] = {(size_t)(rows + o->gemm_m - 1) / o->gemm_m * GEMM_WG,
                                  (size_t)(n + o->gemm_n - 1) / o->gemm_n};
        const size_t local[2] = {GEMM_WG, 1};
        return pt_ocl_launch(o, g, 2, global, local, 7, ARG(wm), ARG(rb), ARG(r), ARG(c), ARG(xm), ARG(nn), ARG(ym));
    }
    if (o->cpu) { /* a work-item per row; a fixed group size: PoCL compiles a
                     kernel once per group size, and would pick many */
        const size_t global[2] = {round_up((size_t)rows, 16), (size_t)(n + MM_NT - 1) / MM_NT};
        const size_t local[2] = {16, 1};
        return pt_ocl_launch(o, k + 2, 2, global, local, 7, ARG(wm), ARG(rb), ARG(r), ARG(c), ARG(xm), ARG(nn),
                      ARG(ym));
    }
    if (pt_ocl_fuses(o, type, n)) return pt_ocl_matmul_fused(o, type, w, rows, cols, x, y, NULL, false);
    const int nt = n == 1 ? 1 : MM_NT;
    if (nt > 1) k++; /* the _n kernel follows the _1 one */
    const size_t global[2] = {(size_t)(rows + MM_NR - 1) / MM_NR * MM_WG, (size_t)(n + nt - 1) / nt};
    const size_t local[2] = {MM_WG, 1};
    return pt_ocl_launch(o, k, 2, global, local, 7, ARG(wm), ARG(rb), ARG(r), ARG(c), ARG(xm), ARG(nn), ARG(ym));
}

/* The legacy quantized types' place in the per-type kernel lists (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0: 0 .. 4), or -1: the types of MM_VEC and MM_GLU. */
static int legacy_slot(uint32_t type) {
    switch (type) {
    case PT_TYPE_Q4_0: return 0;
    case PT_TYPE_Q4_1: return 1;
    case PT_TYPE_Q5_0: return 2;
    case PT_TYPE_Q5_1: return 3;
    case PT_TYPE_Q8_0: return 4;
    default: return -1;
    }
}

bool pt_ocl_fuses(const pt_ocl *o, uint32_t type, int n) { return !o->cpu && n == 1 && legacy_slot(type) >= 0; }

int pt_ocl_matmul_fused(pt_ocl *o, uint32_t type, pt_ocl_mem *w, int64_t rows, int64_t cols,
                        pt_ocl_mem *x, pt_ocl_mem *y, pt_ocl_mem *bias, bool accumulate) {
    const int slot = legacy_slot(type);
    if (slot < 0) {
        set_err(o->err, sizeof o->err, "OpenCL has no fused product for type %s", pt_type_name(type));
        return -1;
    }
    const int k = K_Q4_0_1 + 3 * slot; /* _1, _n, _r per type */
    if (rows <= 0) return 0;
    /* MM_VEC: a group per vec_nr rows */
    const cl_mem wm = (cl_mem)w, xm = (cl_mem)x, ym = (cl_mem)y, bm = (cl_mem)(bias ? bias : y);
    const cl_ulong rb = pt_type_row_bytes(type, cols);
    const cl_int r = (cl_int)rows, c = (cl_int)cols, one = 1, flags = (bias ? 1 : 0) | (accumulate ? 2 : 0);
    const size_t global = (size_t)(rows + o->vec_nr - 1) / o->vec_nr * MM_WG, local = MM_WG;
    return pt_ocl_launch(o, k, 1, &global, &local, 9, ARG(wm), ARG(rb), ARG(r), ARG(c), ARG(xm), ARG(one),
                         ARG(ym), ARG(bm), ARG(flags));
}

int pt_ocl_matmul_glu(pt_ocl *o, uint32_t type, pt_ocl_mem *wg, pt_ocl_mem *wu, int64_t rows, int64_t cols,
                      pt_ocl_mem *x, pt_ocl_mem *out, bool gelu) {
    const int slot = legacy_slot(type);
    if (slot < 0) {
        set_err(o->err, sizeof o->err, "OpenCL has no fused product for type %s", pt_type_name(type));
        return -1;
    }
    const int k = K_Q4_0_GLU + slot;
    if (rows <= 0) return 0;
    const cl_mem gm = (cl_mem)wg, um = (cl_mem)wu, xm = (cl_mem)x, om = (cl_mem)out;
    const cl_ulong rb = pt_type_row_bytes(type, cols);
    const cl_int r = (cl_int)rows, c = (cl_int)cols, ge = gelu;
    const size_t global = (size_t)(rows + o->vec_nr - 1) / o->vec_nr * MM_WG, local = MM_WG;
    return pt_ocl_launch(o, k, 1, &global, &local, 8, ARG(gm), ARG(um), ARG(rb), ARG(r), ARG(c), ARG(xm), ARG(om),
                         ARG(ge));
}

int pt_ocl_rmsnorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *w, int rows, int dim,
                   float eps) {
    if (rows <= 0) return 0;
    const cl_mem ym = (cl_mem)y, xm = (cl_mem)x, wm = (cl_mem)(w ? w : x);
    const cl_int has_w = w != NULL;
    const size_t global = (size_t)rows * RMS_WG, local = RMS_WG;
    return pt_ocl_launch(o, K_RMSNORM, 1, &global, &local, 6, ARG(ym), ARG(xm), ARG(wm), ARG(has_w), ARG(dim),
                  ARG(eps));
}

int pt_ocl_add(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, int64_t count) {
    if (count <= 0) return 0;
    const cl_mem ym = (cl_mem)y, xm = (cl_mem)x;
    const cl_long cnt = count;
    const size_t global = round_up((size_t)count, OPS_WG), local = OPS_WG;
    return pt_ocl_launch(o, K_ADD, 1, &global, &local, 3, ARG(ym), ARG(xm), ARG(cnt));
}

int pt_ocl_add_bias(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *b, int rows, int dim) {
    if (rows <= 0 || dim <= 0) return 0;
    const cl_mem ym = (cl_mem)y, bm = (cl_mem)b;
    const cl_long cnt = (cl_long)rows * dim;
    const size_t global = round_up((size_t)cnt, OPS_WG), local = OPS_WG;
    return pt_ocl_launch(o, K_ADD_BIAS, 1, &global, &local, 4, ARG(ym), ARG(bm), ARG(dim), ARG(cnt));
}

int pt_ocl_rope(pt_ocl *o, pt_ocl_mem *x, pt_ocl_mem *cs, int n, int n_heads, int head_dim,
                int n_rot, bool neox) {
    if (n <= 0 || n_rot < 2) return 0;
    const cl_mem xm = (cl_mem)x, cm = (cl_mem)cs;
    const cl_int nx = neox, nn = n;
    const size_t global = round_up((size_t)n * n_heads * (n_rot / 2), OPS_WG), local = OPS_WG;
    return pt_ocl_launch(o, K_ROPE, 1, &global, &local, 7, ARG(xm), ARG(cm), ARG(nn), ARG(n_heads), ARG(head_dim),
                  ARG(n_rot), ARG(nx));
}

int pt_ocl_rope_store(pt_ocl *o, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v, pt_ocl_mem *cs,
                      pt_ocl_mem *kc, pt_ocl_mem *vc, int n, int p0, int H, int Hkv, int D, int n_rot,
                      bool neox) {
    if (D % 2 || n_rot % 2 || n_rot > D) {
        pt_ocl_set_error(o, "OpenCL rope_store: head size %d, %d rotated", D, n_rot);
        return -1;
    }
    if (n <= 0) return 0;
    const cl_mem qm = (cl_mem)q, km = (cl_mem)k, vm = (cl_mem)v, cm = (cl_mem)cs, kcm = (cl_mem)kc,
                 vcm = (cl_mem)vc;
    const cl_int nn = n, nx = neox;
    const size_t global = round_up((size_t)n * (H + 2 * Hkv) * (D / 2), OPS_WG), local = OPS_WG;
    return pt_ocl_launch(o, K_ROPE_STORE, 1, &global, &local, 13, ARG(qm), ARG(km), ARG(vm), ARG(cm), ARG(kcm),
                         ARG(vcm), ARG(nn), ARG(H), ARG(Hkv), ARG(D), ARG(n_rot), ARG(nx), ARG(p0));
}

int pt_ocl_act_mul(pt_ocl *o, pt_ocl_mem *g, pt_ocl_mem *u, int64_t count, bool gelu) {
    if (count <= 0) return 0;
    const cl_mem gm = (cl_mem)g, um = (cl_mem)u;
    const cl_int ge = gelu;
    const cl_long cnt = count;
    const size_t global = round_up((size_t)count, OPS_WG), local = OPS_WG;
    return pt_ocl_launch(o, K_ACT_MUL, 1, &global, &local, 4, ARG(gm), ARG(um), ARG(ge), ARG(cnt));
}

int pt_ocl_softmax(pt_ocl *o, pt_ocl_mem *x, int rows, int n) {
    if (rows <= 0 || n <= 0) return 0;
    const cl_mem xm = (cl_mem)x;
    const size_t global = (size_t)rows * OPS_WG, local = OPS_WG;
    return pt_ocl_launch(o, K_SOFTMAX, 1, &global, &local, 2, ARG(xm), ARG(n));
}

int pt_ocl_attention(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *kc, pt_ocl_mem *vc,
                     int n, int H, int Hkv, int D, int p0, int window, float scale) {
    if (D > ATT_MAX_D || Hkv <= 0 || H % Hkv) {
        set_err(o->err, sizeof o->err, "OpenCL attention: head size %d (most %d), %d/%d heads", D,
                ATT_MAX_D, H, Hkv);
        return -1;
    }
    if (n <= 0) return 0;
    const cl_mem om = (cl_mem)out, qm = (cl_mem)q, km = (cl_mem)kc, vm = (cl_mem)vc;
    if (n > 1 && !o->cpu) { /* a prompt on a GPU: ATT_TQ tokens a group share the rows */
        const cl_int nn = n;
        const size_t global[2] = {(size_t)H * ATT_WG, (size_t)(n + ATT_TQ - 1) / ATT_TQ}, local[2] = {ATT_WG, 1};
        return pt_ocl_launch(o, K_ATTENTION_TQ, 2, global, local, 11, ARG(om), ARG(qm), ARG(km), ARG(vm), ARG(H),
                             ARG(Hkv), ARG(D), ARG(p0), ARG(window), ARG(scale), ARG(nn));
    }
    const size_t global[2] = {(size_t)H * ATT_WG, (size_t)n}, local[2] = {ATT_WG, 1};
    return pt_ocl_launch(o, K_ATTENTION, 2, global, local, 10, ARG(om), ARG(qm), ARG(km), ARG(vm), ARG(H),
                  ARG(Hkv), ARG(D), ARG(p0), ARG(window), ARG(scale));
}
