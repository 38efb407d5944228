// A CPU emulator for the CUDA kernels of kernels/cuda/, so that their logic
// (index lists, tiling, masks, online softmax, scans, warp collectives) is
// tested on machines without a GPU. Each CUDA thread of a block is a
// coroutine (its own stack; see ctx_swap); a thread runs until its next
// collective (__syncthreads, a warp shuffle / ballot / __syncwarp), and the
// collective resolves once every live thread of the block / warp has reached
// it. Blocks run one after another. Device memory is host memory. It proves logic, not speed, and
// cannot see races between collectives: compute-sanitizer's racecheck on the
// GPU does that.
//
// Streams are the laziest a GPU may be: launches, cuBLAS calls and async
// copies are queued and run, in order, only when the host waits (a stream,
// event or device synchronisation, a synchronous copy, a free). Host code
// that reads a pinned buffer before waiting for the copy into it, or
// rewrites one before the copy out of it ran, gets stale data here, as it
// could on a GPU. Async copies from pageable memory are snapshotted at the
// call and into pageable memory are synchronous, as CUDA documents.
//
// Used by kernels/cuda/cuda.mk's `emu-gpu` target: every .cu file is compiled
// by the host C++ compiler with -DAHA_CUDA_EMU -include this file.
//
// Launches are checked as a GPU checks them (grid.y / grid.z <= 65,535,
// grid.x < 2^31, at most 1024 threads a block): a bad one does not run and
// cudaGetLastError returns cudaErrorInvalidConfiguration. Switches
// (environment, read once; tests may also call emu::fail_in):
//   AHA_EMU_FAIL=launch:N | alloc:N  the N-th launch (cudaGetLastError then
//                        says cudaErrorLaunchOutOfResources) or device / pinned
//                        allocation (cudaErrorMemoryAllocation) of the process fails
//   AHA_EMU_STATS=1      print "emu: N launches, M allocations" to stderr at exit
//   AHA_EMU_SMEM=nan     dynamic shared memory starts as NaN bytes (0xff), not zeros
//   AHA_EMU_ORDER=reverse | random   threads run in reverse / a fresh random
//                        order at every scheduling round, and blocks likewise
//                        (default forward); AHA_EMU_SEED seeds random (default 1)
//   AHA_EMU_CP_ASYNC=early  cp.async lands at issue (default late: at the wait),
//                        so a kernel that overwrites a stage still being read fails
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <deque>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <algorithm>
#include <random>
#include <vector>

using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __grid_constant__

struct float4 {
    float x, y, z, w;
};
struct float2 {
    float x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

// ---- the runtime API subset the launchers and tests use -------------------
typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
enum {
    cudaSuccess = 0,
    cudaErrorNoDevice = 100,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidValue = 1,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize };
struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount;
    size_t totalGlobalMem;
};
static inline const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    default: return "cudaErrorUnknown";
    }
}
static inline const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    default: return "unknown error";
    }
}

// The switches of the top, the counters they act on, the last error.
namespace emu {
struct config {
    long fail_launch = 0, fail_alloc = 0; // 1-based ordinal that fails; 0: none
    long launches = 0, allocs = 0;
    int smem_nan = 0, order = 0, cp_early = 0; // order: 0 forward, 1 reverse, 2 random
    unsigned seed = 1;
    cudaError_t last = cudaSuccess;
    config() {
        const char *f = getenv("AHA_EMU_FAIL");
        if (f && !strncmp(f, "launch:", 7)) fail_launch = atol(f + 7);
        else if (f && !strncmp(f, "alloc:", 6)) fail_alloc = atol(f + 6);
        else if (f && *f) { fprintf(stderr, "emu: AHA_EMU_FAIL=%s: want launch:N or alloc:N\n", f); exit(2); }
        const char *e = getenv("AHA_EMU_SMEM");
        smem_nan = e && !strcmp(e, "nan");
        e = getenv("AHA_EMU_ORDER");
        order = !e ? 0 : !strcmp(e, "reverse") ? 1 : !strcmp(e, "random") ? 2 : 0;
        e = getenv("AHA_EMU_CP_ASYNC");
        cp_early = e && !strcmp(e, "early");
        e = getenv("AHA_EMU_SEED");
        if (e) seed = (unsigned)atol(e);
        e = getenv("AHA_EMU_STATS");
        if (e && *e == '1') atexit([] { fprintf(stderr, "emu: %ld launches, %ld allocations\n", get().launches, get().allocs); });
    }
    static config &get() { static config c; return c; }
};
inline config &cfg() { return config::get(); }
// Make the k-th next launch / allocation fail (k = 1: the next one).
enum { FAIL_LAUNCH, FAIL_ALLOC };
inline void fail_in(int what, long k) {
    if (what == FAIL_LAUNCH) cfg().fail_launch = cfg().launches + k;
    else cfg().fail_alloc = cfg().allocs + k;
}
// "[cpu emulator] ", naming the adversarial switches that are on: the
// tests' PASS / FAIL prefix.
inline const char *label() {
    static char buf[160];
    if (!buf[0]) {
        const config &c = cfg();
        snprintf(buf, sizeof buf, "[cpu emulator%s%s%s%s] ", c.smem_nan || c.order || c.cp_early ? ":" : "",
                 c.smem_nan ? " smem NaN" : "", c.order == 1 ? " reverse order" : c.order == 2 ? " random order" : "",
                 c.cp_early ? " cp.async early" : "");
    }
    return buf;
}
// Counts an allocation; false where it is the one to fail.
inline bool alloc_ok() {
    if (++cfg().allocs != cfg().fail_alloc) return true;
    cfg().last = cudaErrorMemoryAllocation; // as the runtime: cudaGetLastError reports it too
    return false;
}
} // namespace emu
static inline cudaError_t cudaGetLastError(void) {
    cudaError_t e = emu::cfg().last;
    emu::cfg().last = cudaSuccess;
    return e;
}
static inline cudaError_t cudaPeekAtLastError(void) { return emu::cfg().last; }

// The one emulated stream: queued work, run on demand (see the top).
namespace emu {
struct stream {
    std::deque<std::function<void()>> work;
    unsigned long long pushed = 0, ran = 0;
    std::vector<std::pair<const char *, size_t>> pinned; // cudaHostAlloc ranges
};
inline stream &q() { static stream s; return s; }
inline void enqueue(std::function<void()> f) { q().work.push_back(std::move(f)), q().pushed++; }
inline void run_until(unsigned long long seq) {
    while (q().ran < seq) {
        std::function<void()> f = std::move(q().work.front());
        q().work.pop_front();
        q().ran++;
        f();
    }
}
inline void drain() { run_until(q().pushed); }
inline bool is_pinned(const void *p) {
    for (auto &r : q().pinned)
        if ((const char *)p >= r.first && (const char *)p < r.first + r.second) return true;
    return false;
}
} // namespace emu

static inline cudaError_t cudaDeviceSynchronize(void) { emu::drain(); return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { emu::drain(); return cudaSuccess; }
static inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
static inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CPU emulator (tests/gpu/emu/cuda_emu.h)");
    p->major = 9;
    p->multiProcessorCount = 1;
    return cudaSuccess;
}
template <typename T> static inline cudaError_t cudaMalloc(T **p, size_t n) {
    if (!emu::alloc_ok()) return *p = nullptr, cudaErrorMemoryAllocation;
    *p = (T *)calloc(1, n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p) { emu::drain(); free(p); return cudaSuccess; }
enum { cudaHostAllocDefault = 0 };
static inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) {
    if (!emu::alloc_ok()) return *p = nullptr, cudaErrorMemoryAllocation;
    *p = calloc(1, n ? n : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    emu::q().pinned.push_back({(const char *)*p, n ? n : 1});
    return cudaSuccess;
}
static inline cudaError_t cudaFreeHost(void *p) {
    emu::drain();
    auto &v = emu::q().pinned;
    for (size_t i = 0; i < v.size(); i++)
        if (v[i].first == p) v.erase(v.begin() + (long)i);
    free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { emu::drain(); memmove(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t = 0) {
    if (k == cudaMemcpyHostToDevice && !emu::is_pinned(s)) { // staged: the caller may reuse s at once
        std::vector<char> snap((const char *)s, (const char *)s + n);
        emu::enqueue([d, snap] { memcpy(d, snap.data(), snap.size()); });
    } else if (k == cudaMemcpyDeviceToHost && !emu::is_pinned(d)) { // synchronous
        emu::drain();
        memmove(d, s, n);
    } else {
        emu::enqueue([d, s, n] { memmove(d, s, n); });
    }
    return cudaSuccess;
}
static inline cudaError_t cudaMemset(void *d, int v, size_t n) { emu::drain(); memset(d, v, n); return cudaSuccess; }
static inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t = 0) {
    emu::enqueue([d, v, n] { memset(d, v, n); });
    return cudaSuccess;
}
struct emu_event { unsigned long long seq; };
enum { cudaEventDisableTiming = 2, cudaErrorNotReady = 600 };
static inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { *e = new emu_event{0}; return cudaSuccess; }
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete (emu_event *)e; return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) { ((emu_event *)e)->seq = emu::q().pushed; return cudaSuccess; }
static inline cudaError_t cudaEventSynchronize(cudaEvent_t e) { emu::run_until(((emu_event *)e)->seq); return cudaSuccess; }
static inline cudaError_t cudaEventQuery(cudaEvent_t e) { return emu::q().ran >= ((emu_event *)e)->seq ? cudaSuccess : cudaErrorNotReady; }
template <typename F> static inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }

typedef int cublasStatus_t;
enum {
    CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};

// ---- device builtins ------------------------------------------------------
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
template <typename T> static inline T __ldg(const T *p) { return *p; }
// Rounded single operations, never contracted into an FMA (nvcc's reason to
// have them; the host compiler contracts nothing under -std=c++17).
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    unsigned long long o = *p;
    *p += v;
    return o;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
    unsigned long long o = *p;
    if (v < o) *p = v;
    return o;
}

namespace emu {
// Switching threads: swapcontext saves and restores the signal mask, a system
// call at every switch (most of the emulator's time, as sys time). On x86-64
// a switch keeps only what a call must preserve: the callee-saved registers,
// the stack pointer and the SSE / x87 control words; elsewhere, ucontext.
#if defined(__x86_64__)
typedef void *ctx_t; // the saved stack pointer
extern "C" void emu_ctx_switch(ctx_t *save, ctx_t load);
__asm__(".text\n.p2align 4\n"
        ".weak emu_ctx_switch\n.type emu_ctx_switch,@function\n" // every .cu has it: the linker keeps one
        "emu_ctx_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n.size emu_ctx_switch,.-emu_ctx_switch\n");
inline void ctx_swap(ctx_t *save, ctx_t *load) { emu_ctx_switch(save, *load); }
// A context that starts fn (which never returns) on stack [stack, stack + size).
inline void ctx_make(ctx_t *c, char *stack, size_t size, void (*fn)()) {
    uint64_t *top = (uint64_t *)(((uintptr_t)(stack + size) & ~(uintptr_t)15) - 8 * 11);
    // from the saved sp up: control words, r15 r14 r13 r12 rbx rbp, fn (what ret jumps to),
    // a return address fn never uses; fn starts with sp = 8 mod 16, as after a call
    uint32_t mxcsr;
    uint16_t fcw;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fcw));
    memset(top, 0, 8 * 9);
    memcpy(top, &mxcsr, 4), memcpy((char *)top + 4, &fcw, 2);
    top[7] = (uint64_t)(uintptr_t)fn;
    *c = top; // 16-aligned minus 88: fn starts at top + 8 words, 8 mod 16
}
#else
typedef ucontext_t ctx_t;
inline void ctx_swap(ctx_t *save, ctx_t *load) { swapcontext(save, load); }
inline void ctx_make(ctx_t *c, char *stack, size_t size, void (*fn)()) {
    getcontext(c);
    c->uc_stack.ss_sp = stack;
    c->uc_stack.ss_size = size;
    c->uc_link = nullptr;
    makecontext(c, fn, 0);
}
#endif
enum { RUN, WAIT_WARP, WAIT_BLOCK, DONE };
enum { OP_SHFL, OP_XOR, OP_UP, OP_BALLOT, OP_SYNCWARP };
struct cp_copy {
    void *dst;
    const void *src;
    int bytes; // of 16; the rest zero-filled
};
struct thread {
    ctx_t ctx;
    uint3 idx;
    int state, op, arg;
    uint64_t val, result;
    char *stack;
    std::vector<std::vector<cp_copy>> cp_groups; // committed cp.async groups, oldest first
    std::vector<cp_copy> cp_open;                // issued, not yet committed
};
inline thread *&cur() { static thread *t; return t; }
inline ctx_t &sched() { static ctx_t c; return c; }
inline dim3 &block_idx() { static dim3 b; return b; }
inline dim3 &block_dim() { static dim3 b; return b; }
inline dim3 &grid_dim() { static dim3 b; return b; }
inline std::vector<char> &dyn_smem() { static std::vector<char> v; return v; }
inline std::vector<char *> &stack_pool() { static std::vector<char *> v; return v; } // threads' stacks

inline uint64_t collective(int op, uint64_t val, int arg) {
    thread *t = cur();
    t->op = op, t->val = val, t->arg = arg;
    t->state = op == -1 ? WAIT_BLOCK : WAIT_WARP;
    ctx_swap(&t->ctx, &sched());
    return t->result;
}
template <typename T> inline uint64_t bits(T v) {
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}
template <typename T> inline T unbits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

// Resolve one warp's collective: every lane is waiting on the same op.
inline void resolve_warp(thread *w, int n) {
    const int op = w[0].op;
    for (int l = 0; l < n; l++)
        if (w[l].op != op) {
            fprintf(stderr, "emu: warp lanes at different collectives (%d vs %d)\n", w[l].op, op);
            abort();
        }
    uint64_t ballot = 0;
    for (int l = 0; l < n; l++) ballot |= (uint64_t)(w[l].val != 0) << l;
    for (int l = 0; l < n; l++) {
        int src = l;
        switch (op) {
        case OP_SHFL: src = w[l].arg & 31; break;
        case OP_XOR: src = l ^ w[l].arg; break;
        case OP_UP: src = l >= w[l].arg ? l - w[l].arg : l; break;
        }
        w[l].result = op == OP_BALLOT ? ballot : op == OP_SYNCWARP ? 0 : w[src < n ? src : l].val;
    }
    for (int l = 0; l < n; l++) w[l].state = RUN;
}

template <typename F> struct launcher {
    dim3 grid, block;
    size_t smem;
    F kernel;
    template <typename... A> void operator()(A... args) {
        config &c = cfg();
        const long nt = (long)block.x * block.y * block.z;
        if (grid.x < 1 || grid.x > 2147483647u || grid.y < 1 || grid.y > 65535 || grid.z < 1 || grid.z > 65535 ||
            nt < 1 || nt > 1024 || block.z > 64) {
            c.last = cudaErrorInvalidConfiguration; // as the GPU: the kernel does not run
            return;
        }
        if (++c.launches == c.fail_launch) {
            c.last = cudaErrorLaunchOutOfResources;
            return;
        }
        launcher self = *this;
        enqueue([self, args...]() mutable { self.run(args...); });
    }
    template <typename... A> void run(A... args) {
        const int nt = block.x * block.y * block.z;
        if (nt % 32) { fprintf(stderr, "emu: block of %d threads (not a multiple of 32)\n", nt); abort(); }
        std::vector<thread> th(nt);
        const size_t stack = 256 << 10;
        // the stacks stay from launch to launch: a fresh 256 KiB malloc is an
        // mmap, its page faults and a munmap, per thread and launch
        std::vector<char *> &stacks = stack_pool();
        while (stacks.size() < (size_t)nt) stacks.push_back((char *)malloc(stack));
        for (int i = 0; i < nt; i++) th[i].stack = stacks[i];
        config &c = cfg();
        static std::mt19937 rng(c.seed);
        grid_dim() = grid;
        block_dim() = block;
        static F kfn;
        static std::tuple<A...> *targs;
        kfn = kernel;
        std::tuple<A...> tup(args...);
        targs = &tup;
        struct entry {
            static void run() {
                std::apply(kfn, *targs);
                cur()->state = DONE;
                ctx_swap(&cur()->ctx, &sched());
            }
        };
        // blocks in order, reversed or shuffled (AHA_EMU_ORDER); threads likewise each round
        const long nb = (long)grid.x * grid.y * grid.z;
        std::vector<long> border;
        if (c.order) {
            border.resize(nb);
            for (long b = 0; b < nb; b++) border[b] = c.order == 1 ? nb - 1 - b : b;
            if (c.order == 2) std::shuffle(border.begin(), border.end(), rng);
        }
        std::vector<int> tord(nt);
        for (int i = 0; i < nt; i++) tord[i] = c.order == 1 ? nt - 1 - i : i;
        for (long bi = 0; bi < nb; bi++) {
                    const long b = c.order ? border[bi] : bi;
                    block_idx() = dim3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                                       (unsigned)(b / ((long)grid.x * grid.y)));
                    dyn_smem().assign(smem + 16, c.smem_nan ? (char)0xff : 0);
                    for (int i = 0; i < nt; i++) {
                        thread &t = th[i];
                        ctx_make(&t.ctx, t.stack, stack, entry::run);
                        t.idx = {(unsigned)(i % block.x), (unsigned)(i / block.x % block.y), (unsigned)(i / (block.x * block.y))};
                        t.state = RUN;
                        t.cp_groups.clear(), t.cp_open.clear();
                    }
                    for (;;) {
                        bool ran = false;
                        if (c.order == 2) std::shuffle(tord.begin(), tord.end(), rng);
                        for (int i : tord)
                            if (thread &t = th[i]; t.state == RUN) {
                                cur() = &t;
                                ctx_swap(&sched(), &t.ctx);
                                ran = true;
                            }
                        int live = 0, at_block = 0;
                        for (int w = 0; w < nt / 32; w++) {
                            int waiting = 0, alive = 0;
                            for (int l = 0; l < 32; l++) {
                                thread &t = th[w * 32 + l];
                                alive += t.state != DONE;
                                waiting += t.state == WAIT_WARP;
                            }
                            if (waiting && waiting == alive) {
                                if (alive != 32) { fprintf(stderr, "emu: warp collective with exited lanes\n"); abort(); }
                                resolve_warp(&th[w * 32], 32);
                                ran = true;
                            }
                        }
                        for (auto &t : th) {
                            live += t.state != DONE;
                            at_block += t.state == WAIT_BLOCK;
                        }
                        if (!live) break;
                        if (at_block == live) {
                            for (auto &t : th)
                                if (t.state == WAIT_BLOCK) t.state = RUN;
                            ran = true;
                        }
                        if (!ran) { fprintf(stderr, "emu: deadlock (threads wait on different barriers)\n"); abort(); }
                    }
                }
    }
};
template <typename F> launcher<F> launch(dim3 g, dim3 b, size_t smem, F k) { return launcher<F>{g, b, smem, k}; }
} // namespace emu

#define threadIdx (emu::cur()->idx)
#define blockIdx (emu::block_idx())
#define blockDim (emu::block_dim())
#define gridDim (emu::grid_dim())
static inline void __syncthreads(void) { emu::collective(-1, 0, 0); }
static inline void __syncwarp(unsigned = 0xffffffffu) { emu::collective(emu::OP_SYNCWARP, 0, 0); }
static inline unsigned __ballot_sync(unsigned, int p) { return (unsigned)emu::collective(emu::OP_BALLOT, p != 0, 0); }
template <typename T> static inline T __shfl_sync(unsigned, T v, int src) { return emu::unbits<T>(emu::collective(emu::OP_SHFL, emu::bits(v), src)); }
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int m) { return emu::unbits<T>(emu::collective(emu::OP_XOR, emu::bits(v), m)); }
template <typename T> static inline T __shfl_up_sync(unsigned, T v, int d) { return emu::unbits<T>(emu::collective(emu::OP_UP, emu::bits(v), d)); }

// ---- more runtime API, and cuBLAS's GEMMs through the CPU BLAS --------------
#include <cblas.h>
static inline cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = nullptr; return cudaSuccess; }
static inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
static inline cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind k, cudaStream_t = 0) {
    auto copy = [=] {
        for (size_t r = 0; r < height; r++) memmove((char *)d + r * dpitch, (const char *)s + r * spitch, width);
    };
    if (k == cudaMemcpyDeviceToDevice) emu::enqueue(copy);
    else emu::drain(), copy(); // only device-to-device is used asynchronously
    return cudaSuccess;
}
typedef void *cublasHandle_t;
typedef enum { CUBLAS_OP_N, CUBLAS_OP_T } cublasOperation_t;
typedef enum { CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT } cublasGemmAlgo_t;
static inline cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = nullptr; return CUBLAS_STATUS_SUCCESS; }
static inline cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
static inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
static inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, const float *B,
                                         int ldb, const float *beta, float *C, int ldc) {
    const float al = *alpha, be = *beta; // host pointer mode: read at the call
    emu::enqueue([=] {
        cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                    tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, al, A, lda, B, ldb, be, C, ldc);
    });
    return CUBLAS_STATUS_SUCCESS;
}
// Half types: storage and round-to-nearest-even conversions (cuda_fp16.h,
// cuda_bf16.h), enough for the conversion kernels and cublasGemmEx below.
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
static inline uint32_t emu_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static inline float emu_float(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t b = emu_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return {(uint16_t)((b >> 16) | 0x40)}; // NaN stays NaN
    return {(uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16)};
}
static inline float __bfloat162float(__nv_bfloat16 h) { return emu_float((uint32_t)h.x << 16); }
static inline __half __float2half_rn(float f) {
    uint32_t b = emu_bits(f), sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return {(uint16_t)(sign | 0x7e00u)};
    if (a >= 0x477ff000u) return {(uint16_t)(sign | 0x7c00u)}; // rounds to >= 65520: inf
    if (a < 0x38800000u) { // subnormal half (or zero): in units of 2^-24
        float m = emu_float(a) * 16777216.0f;
        return {(uint16_t)(sign | (uint16_t)nearbyintf(m))};
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1); // round the 13 dropped bits to even
    return {(uint16_t)(sign | ((r - 0x38000000u) >> 13))};
}
static inline float __half2float(__half h) {
    uint32_t sign = (uint32_t)(h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1f, m = h.x & 0x3ffu;
    if (e == 0) return (sign ? -1.0f : 1.0f) * (float)m / 16777216.0f;
    if (e == 31) return emu_float(sign | 0x7f800000u | (m << 13));
    return emu_float(sign | ((e + 112) << 23) | (m << 13));
}
static inline __half __ushort_as_half(unsigned short b) { return {b}; }
static inline float __uint_as_float(unsigned b) { return emu_float(b); }
// A column-major operand of op(X) = [rows x cols] as floats (the layout cuBLAS reads).
static inline std::vector<float> emu_operand(const void *p, cudaDataType t, int ld, int cols) {
    std::vector<float> f((size_t)ld * cols);
    for (size_t i = 0; i < f.size(); i++)
        f[i] = t == CUDA_R_32F ? ((const float *)p)[i]
             : t == CUDA_R_16F ? __half2float(((const __half *)p)[i])
                               : __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return f;
}
static inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
                                          cudaDataType ct, int ldc, cublasComputeType_t, cublasGemmAlgo_t) {
    if (ct != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED; // f32 output is all aha asks for
    const float al = *(const float *)alpha, be = *(const float *)beta;
    emu::enqueue([=] { // inputs widened to float, then the f32 product (f32 accumulate)
        std::vector<float> a = emu_operand(A, at, lda, ta == CUBLAS_OP_T ? m : k);
        std::vector<float> b = emu_operand(B, bt, ldb, tb == CUBLAS_OP_T ? k : n);
        cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                    tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, al, a.data(), lda, b.data(), ldb, be,
                    (float *)C, ldc);
    });
    return CUBLAS_STATUS_SUCCESS;
}

// ---- wmma (the TF32 shapes kernels/cuda/dev/attention_tc.cu uses) -----------
// Each lane holds the whole tile: loads, products and stores are computed by
// every lane alike, so no collective is needed; num_elements differs from the
// GPU's, which code may rely on only for element-wise ops (the TF32 rounding).
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
} // namespace precision
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K> struct dims;
template <int M, int N, int K> struct dims<matrix_a, M, N, K> { static const int R = M, C = K; };
template <int M, int N, int K> struct dims<matrix_b, M, N, K> { static const int R = K, C = N; };
template <int M, int N, int K> struct dims<accumulator, M, N, K> { static const int R = M, C = N; };
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static const int R = dims<Use, M, N, K>::R, C = dims<Use, M, N, K>::C;
    static const int num_elements = R * C;
    float x[R * C]; // row-major R x C
};
static inline float __float_to_tf32(float f) { // round to 10 mantissa bits, to nearest
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7f800000u) != 0x7f800000u) b = (b + 0x1000u) & 0xffffe000u;
    memcpy(&f, &b, 4);
    return f;
}
template <typename Use, int M, int N, int K, typename T, typename L>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const float *p, unsigned ldm) {
    const bool col = std::is_same<L, col_major>::value;
    for (int r = 0; r < f.R; r++)
        for (int c = 0; c < f.C; c++) f.x[r * f.C + c] = col ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c];
}
template <int M, int N, int K, typename T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const float *p, unsigned ldm, layout_t l) {
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) f.x[r * N + c] = l == mem_col_major ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c];
}
template <int M, int N, int K, typename T>
static inline void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm, layout_t l) {
    __syncwarp(); // every lane has loaded what it needs before any lane stores
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) (l == mem_col_major ? p[(size_t)c * ldm + r] : p[(size_t)r * ldm + c]) = f.x[r * N + c];
    __syncwarp();
}
template <typename F> static inline void fill_fragment(F &f, float v) {
    for (int i = 0; i < f.num_elements; i++) f.x[i] = v;
}
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename T>
static inline void mma_sync(fragment<accumulator, M, N, K, T> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                            const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, T> &c) {
    float r[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = c.x[i * N + j];
            for (int kk = 0; kk < K; kk++) s += a.x[i * K + kk] * b.x[kk * N + j];
            r[i * N + j] = s;
        }
    memcpy(d.x, r, sizeof r);
}
} // namespace wmma
} // namespace nvcuda

// ---- mma.sync.m16n8k16 (f16 / bf16 in, f32 accumulate; kernels/cuda/mma.cuh) --
// Every lane publishes its registers, the warp meets, each lane computes its
// own four outputs from the owners' registers by the PTX ISA's fragment
// layout (written out again here from the text, not from mma.cuh), and the
// warp meets again before any lane may change its registers.
namespace emu {
// The calling thread's index in its block (warp = it / 32, lane = it % 32).
inline int linear_tid() {
    const dim3 bd = block_dim();
    return (int)(threadIdx.x + bd.x * (threadIdx.y + bd.y * threadIdx.z));
}
inline float mma_elem(uint32_t reg, int hi, int bf16) {
    const uint16_t h = (uint16_t)(hi ? reg >> 16 : reg & 0xffffu);
    return bf16 ? __bfloat162float(__nv_bfloat16{h}) : __half2float(__half{h});
}
inline void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], int bf16) {
    static uint32_t ra[32][32][4], rb[32][32][2]; // [warp][lane]
    const int tid = linear_tid(), w = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
    memcpy(ra[w][lane], a, sizeof ra[w][lane]);
    memcpy(rb[w][lane], b, sizeof rb[w][lane]);
    __syncwarp();
    float out[4];
    for (int i = 0; i < 4; i++) {
        const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
        float s = d[i];
        for (int k = 0; k < 16; k++) {
            // A[row][k]: a_j with row = g' (+8 for j in 2,3,6,7), col = 2t' + (j & 1) (+8 for j >= 4).
            const int ja = (k >= 8 ? 4 : 0) + (row >= 8 ? 2 : 0) + (k & 1);
            const int la = (row & 7) * 4 + ((k & 7) >> 1);
            // B[k][col]: b_j with row = 2t' + (j & 1) (+8 for j >= 2), col = g'.
            const int jb = (k >= 8 ? 2 : 0) + (k & 1);
            const int lb = col * 4 + ((k & 7) >> 1);
            s += mma_elem(ra[w][la][ja >> 1], ja & 1, bf16) * mma_elem(rb[w][lb][jb >> 1], jb & 1, bf16);
        }
        out[i] = s;
    }
    __syncwarp();
    memcpy(d, out, sizeof out);
}

// cp.async as late as a GPU may land it: a copy happens only when its
// thread waits for its group (cp.async.wait_group N performs every group
// but the newest N), so shared memory read before the wait is stale.
inline void cp_async(void *dst, const void *src, int bytes) {
    if (cfg().cp_early) { // AHA_EMU_CP_ASYNC=early: as soon as a GPU may land it
        memcpy(dst, src, (size_t)bytes);
        memset((char *)dst + bytes, 0, (size_t)(16 - bytes));
        return;
    }
    cur()->cp_open.push_back({dst, src, bytes});
}
inline void cp_async_commit() {
    thread *t = cur();
    t->cp_groups.push_back(std::move(t->cp_open));
    t->cp_open.clear();
}
inline void cp_async_wait(size_t n) {
    thread *t = cur();
    while (t->cp_groups.size() > n) {
        for (const cp_copy &c : t->cp_groups.front()) {
            memcpy(c.dst, c.src, (size_t)c.bytes);
            memset((char *)c.dst + c.bytes, 0, (size_t)(16 - c.bytes));
        }
        t->cp_groups.erase(t->cp_groups.begin());
    }
}

// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: lanes 8j..8j+7 give the
// rows of matrix j; register j of lane l holds row l/4, columns 2(l%4) and
// 2(l%4)+1, or with .trans column l/4, rows 2(l%4) and 2(l%4)+1.
inline void ldmatrix_x4(uint32_t r[4], const uint16_t *row, bool trans) {
    static const uint16_t *rows[32][32]; // [warp][lane]
    const int tid = linear_tid(), w = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
    rows[w][lane] = row;
    __syncwarp();
    uint32_t out[4];
    for (int j = 0; j < 4; j++) {
        const uint16_t *const *m = rows[w] + 8 * j;
        const uint16_t lo = trans ? m[2 * t][g] : m[g][2 * t], hi = trans ? m[2 * t + 1][g] : m[g][2 * t + 1];
        out[j] = (uint32_t)lo | (uint32_t)hi << 16;
    }
    __syncwarp();
    memcpy(r, out, sizeof out);
}
} // namespace emu
