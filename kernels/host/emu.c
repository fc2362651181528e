/* emu.c : the host SIMT emulator (see emu.h). Fibers are ucontext contexts; the scheduler
 * runs every runnable fiber of the cluster (one block, or the blocks of a cluster launch) until
 * each blocks at a barrier, a wave operation or its end, then resolves whatever is complete,
 * and reports a deadlock as divergence.
 * A fiber starts by setcontext and then switches by _setjmp / _longjmp, which keep the signal
 * mask as it is: swapcontext sets it at every switch, a system call, and those calls were 99.9 %
 * of the emulator's (1.05 M in a minute of the router suite) and half of make check's time on a
 * machine whose system calls are slow. */
#undef _FORTIFY_SOURCE /* its __longjmp_chk refuses a jump to another fiber's stack */
#define _GNU_SOURCE    /* MAP_ANONYMOUS, ucontext, sigaction */
#include "emu.h"

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK_BYTES (64 * 1024)
#define MAX_BLOCK 1024
#define MAX_SHARED 16
#define MAX_CLUSTER 16

typedef enum { F_RUN, F_BARRIER, F_NAMED_BARRIER, F_CLUSTER_BARRIER, F_WAVE, F_DONE } fiber_state;

typedef struct {
    ucontext_t ctx; /* the fiber's start */
    jmp_buf at;     /* where it yielded, once started */
    int started;
    fiber_state state;
    int value, src;  /* wave operation: this lane's value and the lane it reads */
    emu_collective_fn coll; /* a collective wave operation instead of a shuffle, or NULL */
    void *coll_data;
    int named, named_threads; /* a named barrier: its id and thread count */
    char *stack;
    struct pending_copy *copies; /* asynchronous copies not landed yet, in issue order */
    unsigned ncopies, copies_cap, groups; /* groups: how many this thread has committed */
    struct landed *unfenced; /* landed copies not yet behind this thread's proxy fence */
    unsigned nunfenced, unfenced_cap;
} fiber;

/* The bytes of a landed asynchronous copy, which the async proxy (a warp-group product, a
 * tensor copy) may touch only after the thread that waited for it ran emu_proxy_fence. */
typedef struct landed {
    const char *p;
    unsigned bytes;
} landed;

/* An operation that completes later (emu_later): fn(data) runs at the end of round `due`. */
typedef struct {
    void (*fn)(void *);
    unsigned long long due;
    unsigned block; /* the issuing thread's block in the cluster, for emu_cluster_rank inside fn */
    unsigned char data[EMU_LATER_BYTES];
} later_op;

typedef struct pending_copy {
    void *dst;
    const void *src; /* NULL: zeros */
    unsigned bytes, group;
} pending_copy;

typedef struct {
    const void *key;
    char *mem[MAX_CLUSTER]; /* each block of the cluster has its own copy */
    size_t bytes;
} shared_region;

static struct {
    jmp_buf sched;
    fiber *fibers; /* cluster x block: block r's threads are fibers r * block ... */
    unsigned block, wave, block_x, cluster, threads; /* block_x: the cluster's first block */
    unsigned clusters;                               /* in the grid */
    unsigned long long progress; /* bumped by emu_progress: a round without it, a barrier, a
                                    wave operation or an exit, where fibers only spun, is a deadlock */
    int cur;
    emu_kernel_fn kernel;
    const void *args;
    shared_region shared[MAX_SHARED];
    int nshared;
    size_t dynamic, dynamic_wanted; /* the launch's dynamic shared bytes; the most a kernel took */
    const void *misaligned;         /* the first vector access off its alignment, and that alignment */
    unsigned misaligned_align;
    unsigned arrived[MAX_CLUSTER][16];  /* arrivals without a wait at each block's named barriers */
    unsigned long long stagger;         /* EMU_STAGGER: the generator's state, 0 for lockstep */
    unsigned char speed[MAX_CLUSTER * MAX_BLOCK / 32]; /* a wave's chance in 8 of running in a round */
    later_op *later;                    /* operations in flight (emu_later) */
    unsigned nlater, later_cap;
    unsigned long long round;
    unsigned unfenced; /* landed copies not behind a proxy fence, over the cluster's threads */
} E;

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* ---- guarded memory ---- */

typedef struct {
    char *base;
    size_t bytes;
} alloc_header;

void *emu_alloc(size_t bytes)
{
    size_t pg = page_size(), body = (bytes + 15) & ~(size_t)15, hdr = 16;
    size_t span = (body + hdr + pg - 1) / pg * pg, map_bytes = span + 2 * pg;
    char *base = mmap(NULL, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    if (mprotect(base + pg, span, PROT_READ | PROT_WRITE) != 0) {
        munmap(base, map_bytes);
        return NULL;
    }
    char *user = base + pg + span - body; /* the end touches the guard page */
    memset(user, 0xff, body);
    alloc_header h = {base, map_bytes};
    memcpy(user - hdr, &h, sizeof h);
    return user;
}

void emu_free(void *p)
{
    if (p == NULL) return;
    alloc_header h;
    memcpy(&h, (char *)p - 16, sizeof h);
    munmap(h.base, h.bytes);
}

/* ---- faults ---- */

static void on_fault(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "emu: %s at %p in block %d thread %d (out-of-bounds access?)\n",
                     sig == SIGSEGV ? "segmentation fault" : "bus error", info->si_addr, emu_block_x(),
                     emu_thread_x());
    if (write(2, msg, (size_t)n) < 0) _exit(86);
    _exit(86);
}

void emu_misuse(const char *what)
{
    char msg[320];
    int n = snprintf(msg, sizeof msg, "emu: block %d thread %d: %s\n", emu_block_x(), emu_thread_x(), what);
    if (n > (int)sizeof msg - 1) n = (int)sizeof msg - 1;
    if (write(2, msg, (size_t)n) < 0) _exit(86);
    _exit(86);
}

/* Installs the fault reporter for the length of a launch; the caller's handlers (a GPU
 * runtime's, in tests that run both) come back afterwards. */
static struct sigaction saved_segv, saved_bus;

static void install_fault_handler(void)
{
    static char altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, &saved_segv);
    sigaction(SIGBUS, &sa, &saved_bus);
}

static void restore_fault_handler(void)
{
    sigaction(SIGSEGV, &saved_segv, NULL);
    sigaction(SIGBUS, &saved_bus, NULL);
}

/* ---- calls from kernels ---- */

int emu_thread_x(void) { return E.cur % (int)E.block; }
int emu_block_x(void) { return (int)E.block_x + E.cur / (int)E.block; }
int emu_grid_x(void) { return (int)(E.clusters * E.cluster); }
int emu_cluster_rank(void) { return E.cur / (int)E.block; }

static void yield(fiber_state s)
{
    fiber *f = &E.fibers[E.cur];
    f->state = s;
    if (_setjmp(f->at) == 0) _longjmp(E.sched, 1);
}

void emu_barrier(void) { yield(F_BARRIER); }
void emu_cluster_barrier(void) { yield(F_CLUSTER_BARRIER); }
int emu_cluster_id(void) { return (int)(E.block_x / E.cluster); }
int emu_cluster_count(void) { return (int)E.clusters; }
void emu_spin(void) { yield(F_RUN); }
void emu_progress(void) { E.progress++; }

void emu_named_barrier(int id, int threads)
{
    fiber *f = &E.fibers[E.cur];
    f->named = id, f->named_threads = threads;
    yield(F_NAMED_BARRIER);
}

void emu_named_arrive(int id, int threads)
{
    const unsigned b = (unsigned)E.cur / E.block;
    (void)threads; /* the count is the waiters' (resolve_named) */
    if (id >= 0 && id < 16) E.arrived[b][id]++;
    emu_progress();
}

int emu_shfl(int v, int src_lane)
{
    fiber *f = &E.fibers[E.cur];
    f->value = v;
    f->src = src_lane;
    yield(F_WAVE);
    return f->value; /* the scheduler stored the result here */
}

void emu_wave_collective(void *lane_data, emu_collective_fn fn)
{
    fiber *f = &E.fibers[E.cur];
    f->coll = fn;
    f->coll_data = lane_data;
    yield(F_WAVE);
    f->coll = NULL;
}

void *emu_shared(const void *key, size_t bytes)
{
    const int rank = emu_cluster_rank();
    for (int i = 0; i < E.nshared; i++)
        if (E.shared[i].key == key) return E.shared[i].mem[rank];
    if (E.nshared == MAX_SHARED) return NULL;
    shared_region *r = &E.shared[E.nshared++];
    *r = (shared_region){key, {NULL}, bytes};
    for (unsigned b = 0; b < E.cluster; b++) r->mem[b] = emu_alloc(bytes);
    return r->mem[rank];
}

void *emu_cluster_map(const void *shared, int rank)
{
    if (rank < 0 || (unsigned)rank >= E.cluster) return NULL;
    for (int i = 0; i < E.nshared; i++)
        for (unsigned b = 0; b < E.cluster; b++) {
            const char *m = E.shared[i].mem[b], *p = shared;
            if (m && p >= m && p < m + E.shared[i].bytes) return E.shared[i].mem[rank] + (p - m);
        }
    return NULL;
}

void *emu_shared_dynamic(const void *key, size_t bytes)
{
    if (bytes > E.dynamic_wanted) E.dynamic_wanted = bytes;
    return emu_shared(key, bytes);
}

void *emu_aligned(const void *p, unsigned align)
{
    static _Alignas(64) char scratch[64]; /* what a misaligned access touches instead */
    if ((uintptr_t)p % align == 0) return (void *)p;
    if (E.misaligned == NULL) E.misaligned = p, E.misaligned_align = align;
    return scratch;
}

/* ---- scheduling ----
 * By default every runnable fiber runs in every round, so the waves of a block advance
 * together and a wave reading shared memory that another is about to overwrite has finished
 * before the write: such a race stays hidden. With EMU_STAGGER set to a number (the seed),
 * each launch gives every wave a speed, its chance in 8 of running in a round, so that waves
 * drift apart between their synchronisation points as on a GPU; the same seed gives the same
 * schedule. */

static unsigned stagger_next(void)
{
    E.stagger ^= E.stagger << 13, E.stagger ^= E.stagger >> 7, E.stagger ^= E.stagger << 17;
    return (unsigned)(E.stagger >> 32);
}

/* The state for this launch: the seed mixed with the launch's number, or 0. */
static unsigned long long stagger_seed(void)
{
    static unsigned long long launches;
    const char *v = getenv("EMU_STAGGER");
    const unsigned long long seed = v ? strtoull(v, NULL, 0) : 0;
    return seed ? (seed ^ ++launches * 0x9e3779b97f4a7c15ull) | 1 : 0;
}

/* Whether the wave of thread t (its first lane) runs this round. */
static int wave_runs(unsigned t)
{
    if (E.stagger == 0) return 1;
    const unsigned per_block = (E.block + E.wave - 1) / E.wave;
    return stagger_next() % 8 < E.speed[t / E.block * per_block + t % E.block / E.wave];
}

/* ---- operations in flight: asynchronous copies land when the issuing thread waits for
 * them, tensor copies and remote stores some rounds on (emu_later) ---- */

/* p (an array of *cap elements of `size` bytes, n in use) with room for one more. */
static void *grow(void *p, unsigned n, unsigned *cap, size_t size)
{
    if (n < *cap) return p;
    const unsigned c = *cap ? 2 * *cap : 64;
    void *q = realloc(p, c * size);
    if (q == NULL) emu_misuse("out of memory for the emulator's bookkeeping");
    *cap = c;
    return q;
}

void emu_copy_async(void *dst, const void *src, unsigned bytes)
{
    fiber *f = &E.fibers[E.cur];
    f->copies = grow(f->copies, f->ncopies, &f->copies_cap, sizeof *f->copies);
    f->copies[f->ncopies++] = (pending_copy){dst, src, bytes, f->groups};
}

void emu_copy_commit(void) { E.fibers[E.cur].groups++; }

void emu_later(void (*fn)(void *), const void *data, size_t bytes)
{
    if (bytes > EMU_LATER_BYTES) emu_misuse("emu_later: operation too large");
    E.later = grow(E.later, E.nlater, &E.later_cap, sizeof *E.later);
    later_op *o = &E.later[E.nlater++];
    /* the end of this round, or with EMU_STAGGER of one of the next 8 */
    o->fn = fn, o->due = E.round + (E.stagger ? stagger_next() % 8 : 0), o->block = (unsigned)E.cur / E.block;
    memcpy(o->data, data, bytes);
}

/* Completes the operations due by this round, in issue order. @return how many. */
static unsigned land_due(int all)
{
    unsigned kept = 0, landed = 0;
    const int cur = E.cur;
    for (unsigned i = 0; i < E.nlater; i++) {
        later_op o = E.later[i];
        if (!all && o.due > E.round) {
            E.later[kept++] = o;
            continue;
        }
        E.cur = (int)(o.block * E.block); /* the issuing block, for what fn asks of the cluster */
        o.fn(o.data);
        landed++;
    }
    E.nlater = kept, E.cur = cur;
    return landed;
}

/* Adds a landed copy to f's unfenced ones (once for the same bytes). */
static void note_unfenced(fiber *f, const void *p, unsigned bytes)
{
    for (unsigned i = 0; i < f->nunfenced; i++)
        if (f->unfenced[i].p == p && f->unfenced[i].bytes == bytes) return;
    f->unfenced = grow(f->unfenced, f->nunfenced, &f->unfenced_cap, sizeof *f->unfenced);
    f->unfenced[f->nunfenced++] = (landed){p, bytes};
    E.unfenced++;
}

void emu_copy_wait(int newest)
{
    fiber *f = &E.fibers[E.cur];
    unsigned kept = 0;
    for (unsigned i = 0; i < f->ncopies; i++) {
        pending_copy *c = &f->copies[i];
        if (newest >= 0 && c->group + (unsigned)newest >= f->groups) { /* uncommitted, or among the newest */
            f->copies[kept++] = *c;
            continue;
        }
        if (c->src) memcpy(c->dst, c->src, c->bytes);
        else memset(c->dst, 0, c->bytes);
        note_unfenced(f, c->dst, c->bytes);
    }
    f->ncopies = kept;
}

void emu_proxy_fence(void)
{
    fiber *f = &E.fibers[E.cur];
    E.unfenced -= f->nunfenced;
    f->nunfenced = 0;
}

void emu_async_touch(const void *p, size_t bytes, const char *what)
{
    if (E.unfenced == 0) return;
    const char *lo = p, *hi = lo + bytes;
    for (unsigned t = 0; t < E.threads; t++)
        for (unsigned i = 0; i < E.fibers[t].nunfenced; i++) {
            const landed *l = &E.fibers[t].unfenced[i];
            if (l->p < hi && lo < l->p + l->bytes) {
                char msg[200];
                snprintf(msg, sizeof msg, "%s bytes that thread %u's asynchronous copy wrote, with no aot_wg_shared_fence() by that thread after its wait",
                         what, t % E.block);
                emu_misuse(msg);
            }
        }
}

static void fiber_main(void)
{
    E.kernel(E.args);
    if (E.fibers[E.cur].ncopies) emu_misuse("the thread ended with asynchronous copies it never waited for");
    E.fibers[E.cur].state = F_DONE;
    _longjmp(E.sched, 1);
}

/* Runs fiber t until it yields or ends. */
static void run_fiber(unsigned t)
{
    fiber *f = &E.fibers[t];
    E.cur = (int)t;
    if (_setjmp(E.sched) != 0) return;
    if (f->started) _longjmp(f->at, 1);
    f->started = 1;
    setcontext(&f->ctx);
}

static int fail(char *err, size_t cap, const char *msg, unsigned a, unsigned b)
{
    if (E.cluster > 1) snprintf(err, cap, "emu: cluster of blocks %u..%u: ", E.block_x, E.block_x + E.cluster - 1);
    else snprintf(err, cap, "emu: block %u: ", E.block_x);
    size_t n = strlen(err);
    snprintf(err + n, cap - n, msg, a, b);
    return -1;
}

static int resolve_shuffle(unsigned w0, char *err, size_t cap)
{
    int vals[64];
    for (unsigned l = 0; l < E.wave; l++) {
        if (E.fibers[w0 + l].coll) return fail(err, cap, "lane %u is in a collective while others shuffle (wave of %u)", l, E.wave);
        vals[l] = E.fibers[w0 + l].value;
    }
    for (unsigned l = 0; l < E.wave; l++) {
        fiber *f = &E.fibers[w0 + l];
        if (f->src < 0 || (unsigned)f->src >= E.wave)
            return fail(err, cap, "shuffle from lane %u of a %u-lane wave", (unsigned)f->src, E.wave);
        f->value = vals[f->src];
        f->state = F_RUN;
    }
    return 0;
}

static int resolve_collective(unsigned w0, char *err, size_t cap)
{
    void *data[64];
    for (unsigned l = 0; l < E.wave; l++) {
        if (E.fibers[w0 + l].coll != E.fibers[w0].coll)
            return fail(err, cap, "lane %u is in another wave operation than lane 0 (wave of %u)", l, E.wave);
        data[l] = E.fibers[w0 + l].coll_data;
    }
    if (E.fibers[w0].coll(data, E.wave, err, cap) != 0) return -1;
    for (unsigned l = 0; l < E.wave; l++) E.fibers[w0 + l].state = F_RUN;
    return 0;
}

/* Resolves complete wave operations. @return waves released, or -1 on an error. */
static int resolve_waves(char *err, size_t cap)
{
    int released = 0;
    for (unsigned w0 = 0; w0 < E.threads; w0 += E.wave) {
        const unsigned in_block = w0 % E.block; /* waves never span blocks */
        unsigned at = 0, lanes = E.block - in_block < E.wave ? E.block - in_block : E.wave;
        for (unsigned l = 0; l < lanes; l++) at += E.fibers[w0 + l].state == F_WAVE;
        if (at == 0) continue;
        if (at != lanes || lanes != E.wave)
            return fail(err, cap, "wave op reached by %u of %u lanes (divergence or exited lanes)",
                        at, E.wave);
        if (E.fibers[w0].coll ? resolve_collective(w0, err, cap) : resolve_shuffle(w0, err, cap)) return -1;
        released++;
    }
    return released;
}

/* Releases the threads t0 .. t0 + n - 1 once all of them wait at `state` (a block's barrier, or
 * the cluster's); none may have exited. @return 1 released, 0 not yet, -1 on an error. */
static int resolve_group(unsigned t0, unsigned n, fiber_state state, char *err, size_t cap)
{
    unsigned at = 0, done = 0;
    for (unsigned t = t0; t < t0 + n; t++) {
        at += E.fibers[t].state == state;
        done += E.fibers[t].state == F_DONE;
    }
    if (at == 0) return 0;
    if (at + done != n) return 0; /* others still in wave ops: not yet */
    if (done) return fail(err, cap, "barrier reached by %u threads while %u had exited", at, done);
    for (unsigned t = t0; t < t0 + n; t++) E.fibers[t].state = F_RUN;
    return 1;
}

/* Releases the fibers of block b at a named barrier (ids 0..15) once those waiting there and
 * those that arrived without waiting make the barrier's thread count. */
static int resolve_named(unsigned b, char *err, size_t cap)
{
    unsigned at[16] = {0}, want[16] = {0};
    int released = 0;
    for (unsigned t = b * E.block; t < (b + 1) * E.block; t++) {
        const fiber *f = &E.fibers[t];
        if (f->state != F_NAMED_BARRIER) continue;
        if (f->named < 0 || f->named > 15) return fail(err, cap, "named barrier %u of 0..15 (thread %u)", (unsigned)f->named, t % E.block);
        at[f->named]++, want[f->named] = (unsigned)f->named_threads;
    }
    for (unsigned id = 0; id < 16; id++) {
        const unsigned n = at[id] + E.arrived[b][id];
        if (at[id] && n > want[id]) return fail(err, cap, "named barrier reached by %u threads, more than its %u", n, want[id]);
        if (at[id] == 0 || n < want[id]) continue;
        E.arrived[b][id] = 0;
        for (unsigned t = b * E.block; t < (b + 1) * E.block; t++)
            if (E.fibers[t].state == F_NAMED_BARRIER && E.fibers[t].named == (int)id) E.fibers[t].state = F_RUN;
        released++;
    }
    return released;
}

static int resolve_barriers(char *err, size_t cap)
{
    int released = 0;
    for (unsigned b = 0; b < E.cluster; b++) {
        int r = resolve_named(b, err, cap);
        if (r < 0) return -1;
        released += r;
    }
    for (unsigned b = 0; b < E.cluster; b++) {
        int r = resolve_group(b * E.block, E.block, F_BARRIER, err, cap);
        if (r < 0) return -1;
        released += r;
    }
    if (released) return released;
    return resolve_group(0, E.threads, F_CLUSTER_BARRIER, err, cap);
}

static int run_cluster(char *err, size_t cap)
{
    for (unsigned t = 0; t < E.threads; t++) {
        fiber *f = &E.fibers[t];
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = f->stack;
        f->ctx.uc_stack.ss_size = STACK_BYTES;
        f->ctx.uc_link = NULL;
        makecontext(&f->ctx, fiber_main, 0);
        f->state = F_RUN, f->started = 0, f->ncopies = 0, f->groups = 0, f->nunfenced = 0;
    }
    for (int i = 0; i < E.nshared; i++)
        for (unsigned b = 0; b < E.cluster; b++) memset(E.shared[i].mem[b], 0xff, E.shared[i].bytes);
    memset(E.arrived, 0, sizeof E.arrived);
    E.unfenced = 0;
    for (size_t w = 0; E.stagger && w < sizeof E.speed; w++) E.speed[w] = (unsigned char)(1 + stagger_next() % 8);
    /* rounds in a row without progress that make a deadlock: with stagger, a slow wave may sit
     * out many ((7/8)^400 is 1e-23) */
    const unsigned idle_limit = E.stagger ? 400 : 3;
    unsigned idle = 0, last_live = E.threads;
    for (;;) {
        unsigned live = 0, spinning = 0;
        const unsigned long long progress = E.progress;
        int runs = 1;
        for (unsigned t = 0; t < E.threads; t++) {
            if (t % E.block % E.wave == 0) runs = wave_runs(t);
            if (E.fibers[t].state != F_RUN || !runs) continue;
            run_fiber(t);
        }
        for (unsigned t = 0; t < E.threads; t++) {
            live += E.fibers[t].state != F_DONE;
            spinning += E.fibers[t].state == F_RUN;
        }
        const unsigned landed = land_due(live == 0);
        E.round++;
        if (live == 0) return 0;
        int w = resolve_waves(err, cap);
        if (w < 0) return -1;
        int b = w ? 0 : resolve_barriers(err, cap);
        if (b < 0) return -1;
        if (w || b || landed || E.nlater || E.progress != progress || live != last_live) idle = 0;
        else if (spinning == 0 || ++idle == idle_limit)
            return fail(err, cap, "deadlock: %u threads wait at a barrier, a wave op or an mbarrier that nothing will release (of %u)",
                        live, E.threads);
        last_live = live;
    }
}

int emu_launch_cluster(emu_kernel_fn kernel, const void *args, unsigned grid, unsigned block, unsigned cluster,
                       size_t dynamic_shared, unsigned wave, char *err, size_t cap)
{
    if (block == 0 || block > MAX_BLOCK || (wave != 32 && wave != 64))
        return snprintf(err, cap, "emu: bad launch (block %u, wave %u)", block, wave), -1;
    if (cluster == 0 || cluster > MAX_CLUSTER || grid % cluster != 0)
        return snprintf(err, cap, "emu: bad launch (grid %u in clusters of %u; at most %d a cluster)", grid, cluster,
                        MAX_CLUSTER), -1;
    memset(&E, 0, sizeof E);
    E.kernel = kernel, E.args = args, E.block = block, E.wave = wave, E.dynamic = dynamic_shared;
    E.cluster = cluster, E.threads = cluster * block, E.clusters = grid / cluster;
    E.stagger = stagger_seed();
    E.fibers = calloc(E.threads, sizeof *E.fibers);
    int rc = E.fibers ? 0 : -1;
    for (unsigned t = 0; rc == 0 && t < E.threads; t++)
        if ((E.fibers[t].stack = malloc(STACK_BYTES)) == NULL) rc = -1;
    install_fault_handler();
    for (unsigned b = 0; rc == 0 && b < grid; b += cluster) {
        E.block_x = b;
        rc = run_cluster(err, cap);
        if (rc == 0 && E.dynamic_wanted > E.dynamic)
            rc = fail(err, cap, "the kernel uses %u bytes of dynamic shared memory; the launch gave %u",
                      (unsigned)E.dynamic_wanted, (unsigned)E.dynamic);
        if (rc == 0 && E.misaligned) /* a GPU faults on such an access; x86 does not */
            rc = fail(err, cap, "a %u-byte vector access at an address %u bytes off its alignment",
                      E.misaligned_align, (unsigned)((uintptr_t)E.misaligned % E.misaligned_align));
    }
    restore_fault_handler();
    for (unsigned t = 0; E.fibers && t < E.threads; t++) free(E.fibers[t].stack), free(E.fibers[t].copies), free(E.fibers[t].unfenced);
    free(E.later);
    free(E.fibers);
    for (int i = 0; i < E.nshared; i++)
        for (unsigned b = 0; b < E.cluster; b++) emu_free(E.shared[i].mem[b]);
    E.nshared = 0;
    return rc;
}

int emu_launch(emu_kernel_fn kernel, const void *args, unsigned grid, unsigned block,
               size_t dynamic_shared, unsigned wave, char *err, size_t cap)
{
    return emu_launch_cluster(kernel, args, grid, block, 1, dynamic_shared, wave, err, cap);
}
