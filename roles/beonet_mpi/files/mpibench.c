/*
 * mpibench: an MPI synthetic load generator after the SC98 paper's third class
 * of measurements (fixed and random patterns, and the effect of routed traffic
 * on a gateway's computation), plus one collective. MPI and libc only.
 *
 *   mpirun ... mpibench PAIRS OUT.csv [messages [seed [compute_seconds]]]
 *
 * PAIRS, written by the controller from the plan, one item a line:
 *   pair CLASS A B        ranks A and B exchange messages (A times them)
 *   gateway G A B         rank G computes while A and B exchange through it
 * Phases, each started after MPI_Barrier:
 *   fixed     every pair of one class at once; `messages` (250) ping-pongs a pair,
 *             sizes log-uniform in 4..65536 bytes; time = half the round trip
 *   random    `messages` rounds; each round a random perfect matching of the
 *             ranks (the same on every rank: one seed) exchanges one message
 *   compute   a tight floating-point loop on G for compute_seconds (2), alone
 *             and while A and B stream 64 KB ping-pongs through it
 *   allreduce MPI_Allreduce of 8 B .. 1 MB of doubles, 20 times each
 * Rank 0 gathers every sample and writes OUT.csv:
 *   phase,class,a,b,bytes,usec     (compute: bytes = 0, usec = Mflop/s)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXLINE 256
#define MAXSIZE 65536
#define STREAM 65536
#define MAXCLASS 32

typedef struct { int phase, cls, a, b, bytes; double usec; } sample;
typedef struct { int cls, a, b; } pair;

static sample *samples;
static int nsamples, capsamples;
static char classes[MAXCLASS][32];
static int nclasses;

static void add(int phase, int cls, int a, int b, int bytes, double usec)
{
    if (nsamples == capsamples) {
        capsamples = capsamples ? 2 * capsamples : 1024;
        samples = realloc(samples, (size_t)capsamples * sizeof *samples);
        if (!samples) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    samples[nsamples++] = (sample){phase, cls, a, b, bytes, usec};
}

static unsigned long long rng_state;
static unsigned rnd(void)          /* xorshift64*: the same sequence on every rank */
{
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ULL) >> 32);
}

static int size_of(int k, int seed)  /* message k's size: log-uniform in 4..MAXSIZE */
{
    unsigned long long keep = rng_state;
    rng_state = 0x9E3779B97F4A7C15ULL ^ ((unsigned long long)seed << 20) ^ (unsigned long long)k;
    for (int i = 0; i < 4; i++) rnd();
    int bits = 2 + (int)(rnd() % 15);            /* 2^2 .. 2^16 */
    int lo = 1 << bits, size = lo + (int)(rnd() % (unsigned)lo);
    rng_state = keep;
    return size > MAXSIZE ? MAXSIZE : size;
}

static double pingpong(int peer, char *buf, int bytes, int first)
{
    double t0 = MPI_Wtime();
    if (first) {
        MPI_Send(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
    }
    return (MPI_Wtime() - t0) * 1e6 / 2;
}

static int class_id(const char *name)
{
    for (int i = 0; i < nclasses; i++)
        if (!strcmp(classes[i], name)) return i;
    if (nclasses == MAXCLASS) return MAXCLASS - 1;
    snprintf(classes[nclasses], sizeof classes[0], "%s", name);
    return nclasses++;
}

static int read_pairs(const char *path, int size, pair *pairs, int max, int gw[3])
{
    FILE *f = fopen(path, "r");
    char line[MAXLINE], word[32], name[32];
    int n = 0, a, b, g;
    if (!f) { perror(path); MPI_Abort(MPI_COMM_WORLD, 2); }
    gw[0] = -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%31s %31s %d %d", word, name, &a, &b) == 4 && !strcmp(word, "pair")
            && a >= 0 && b >= 0 && a < size && b < size && a != b && n < max)
            pairs[n++] = (pair){class_id(name), a, b};
        else if (sscanf(line, "%31s %d %d %d", word, &g, &a, &b) == 4 && !strcmp(word, "gateway")
                 && g >= 0 && a >= 0 && b >= 0 && g < size && a < size && b < size)
            gw[0] = g, gw[1] = a, gw[2] = b;
    }
    fclose(f);
    return n;
}

static void fixed(int me, pair *pairs, int n, int messages, int seed, char *buf)
{
    for (int c = 0; c < nclasses; c++) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            if (pairs[i].cls != c || (me != pairs[i].a && me != pairs[i].b)) continue;
            int first = me == pairs[i].a, peer = first ? pairs[i].b : pairs[i].a;
            for (int k = 0; k < messages; k++) {
                int bytes = size_of(k, seed);
                double us = pingpong(peer, buf, bytes, first);
                if (first) add(0, c, pairs[i].a, pairs[i].b, bytes, us);
            }
        }
    }
}

static void random_pattern(int me, int size, int messages, int seed, char *buf)
{
    int *perm = malloc((size_t)size * sizeof *perm);
    rng_state = 0xC0FFEEULL + (unsigned long long)seed;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < messages; k++) {
        for (int i = 0; i < size; i++) perm[i] = i;
        for (int i = size - 1; i > 0; i--) {
            int j = (int)(rnd() % (unsigned)(i + 1)), t = perm[i];
            perm[i] = perm[j]; perm[j] = t;
        }
        int bytes = size_of(k + 100000, seed);
        for (int i = 0; i + 1 < size; i += 2) {
            int a = perm[i] < perm[i + 1] ? perm[i] : perm[i + 1];
            int b = perm[i] < perm[i + 1] ? perm[i + 1] : perm[i];
            if (me != a && me != b) continue;
            double us = pingpong(me == a ? b : a, buf, bytes, me == a);
            if (me == a) add(1, -1, a, b, bytes, us);
        }
    }
    free(perm);
}

static double flops(double seconds)  /* Mflop/s of a dependent multiply-add loop */
{
    volatile double sink;
    double x = 1.0, y = 0.999999, z = 1e-9, t0 = MPI_Wtime(), n = 0;
    while (MPI_Wtime() - t0 < seconds) {
        for (int i = 0; i < 100000; i++) x = x * y + z;
        n += 2.0 * 100000;
    }
    sink = x;
    (void)sink;
    return n / (MPI_Wtime() - t0) / 1e6;
}

static void stream_until_stopped(int me, const int gw[3], char *buf)
{
    int a = gw[1], b = gw[2], flag = 0, one;
    for (;;) {
        if (me == a) {
            MPI_Iprobe(gw[0], 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (flag) MPI_Recv(&one, 1, MPI_INT, gw[0], 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            buf[0] = (char)flag;
            MPI_Send(buf, STREAM, MPI_CHAR, b, 2, MPI_COMM_WORLD);
            if (flag) return;
            MPI_Recv(buf, STREAM, MPI_CHAR, b, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, STREAM, MPI_CHAR, a, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (buf[0]) return;
            MPI_Send(buf, STREAM, MPI_CHAR, a, 2, MPI_COMM_WORLD);
        }
    }
}

static void compute(int me, const int gw[3], double seconds, char *buf)
{
    int one = 1;
    if (gw[0] < 0 || gw[0] == gw[1] || gw[0] == gw[2] || gw[1] == gw[2]) return;
    for (int loaded = 0; loaded < 2; loaded++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == gw[0]) {
            add(2, loaded, gw[1], gw[2], 0, flops(seconds));
            if (loaded) MPI_Send(&one, 1, MPI_INT, gw[1], 9, MPI_COMM_WORLD);
        } else if (loaded && (me == gw[1] || me == gw[2])) {
            stream_until_stopped(me, gw, buf);
        }
    }
}

static void allreduce(int me)
{
    int n = 1 << 17;
    double *in = calloc((size_t)n, sizeof *in), *out = calloc((size_t)n, sizeof *out);
    for (int count = 1; count <= n; count *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int r = 0; r < 20; r++)
            MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double us = (MPI_Wtime() - t0) * 1e6 / 20;
        if (me == 0) add(3, -1, 0, 0, count * (int)sizeof(double), us);
    }
    free(in);
    free(out);
}

static void gather_and_write(int me, int size, const char *out)
{
    int *counts = NULL, *displs = NULL, total = 0;
    sample *all = NULL;
    MPI_Datatype type;
    MPI_Type_contiguous((int)sizeof(sample), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    if (me == 0) counts = malloc((size_t)size * sizeof *counts), displs = malloc((size_t)size * sizeof *displs);
    MPI_Gather(&nsamples, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int i = 0; i < size; i++) displs[i] = total, total += counts[i];
        all = malloc((size_t)(total ? total : 1) * sizeof *all);
    }
    MPI_Gatherv(samples, nsamples, type, all, counts, displs, type, 0, MPI_COMM_WORLD);
    MPI_Type_free(&type);
    if (me != 0) return;
    static const char *phase[] = {"fixed", "random", "compute", "allreduce"};
    FILE *f = fopen(out, "w");
    if (!f) { perror(out); MPI_Abort(MPI_COMM_WORLD, 2); }
    fprintf(f, "phase,class,a,b,bytes,usec\n");
    for (int i = 0; i < total; i++) {
        const sample *s = &all[i];
        const char *cls = s->phase == 0 ? classes[s->cls]
                        : s->phase == 2 ? (s->cls ? "loaded" : "idle") : "";
        fprintf(f, "%s,%s,%d,%d,%d,%.3f\n", phase[s->phase], cls, s->a, s->b, s->bytes, s->usec);
    }
    fclose(f);
    free(all);
    free(counts);
    free(displs);
}

int main(int argc, char **argv)
{
    int me, size, gw[3];
    static pair pairs[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (me == 0) fprintf(stderr, "usage: mpibench PAIRS OUT.csv [messages [seed [compute_seconds]]]\n");
        MPI_Finalize();
        return 2;
    }
    int messages = argc > 3 ? atoi(argv[3]) : 250, seed = argc > 4 ? atoi(argv[4]) : 1998;
    double seconds = argc > 5 ? atof(argv[5]) : 2.0;
    char *buf = calloc(MAXSIZE > STREAM ? MAXSIZE : STREAM, 1);
    int n = read_pairs(argv[1], size, pairs, 4096, gw);
    fixed(me, pairs, n, messages, seed, buf);
    random_pattern(me, size, messages, seed, buf);
    compute(me, gw, seconds, buf);
    allreduce(me);
    gather_and_write(me, size, argv[2]);
    free(buf);
    MPI_Finalize();
    return 0;
}
