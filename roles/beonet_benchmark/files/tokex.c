/*
 * tokex: the Beowulf papers' token exchange, ring and file-copy benchmarks in
 * one C file with no dependency beyond libc.  Built on the nodes (or once for
 * them) with:   gcc -O2 -Wall -o tokex tokex.c
 *
 *   tokex serve  [-p PORT] [-B ADDR] [--dir DIR] [--idle S] [--deadline S] [--daemon --pidfile F]
 *   tokex client -H HOST [-p PORT] [-B ADDR] [--proto tcp|udp|both] [--sizes 4,8,..] [-n 1000]
 *                [--window W] [--mode pingpong|stream] [--warmup K] [--start-at EPOCH]
 *                [--mtu 1500] [--stats-only] [--deadline S] [--out FILE]
 *   tokex ring   --rank R --addrs A0,A1,.. [-p PORT] [--sizes ..] [-n ROUNDS] [--deadline S]
 *   tokex mkfile PATH BYTES
 *   tokex copy   SRC DST                       (local read()/write() copy)
 *   tokex fsend  FILE -H HOST [-p PORT] [-B ADDR] --dest NAME   (remote copy; NAME lands in the server's --dir)
 *
 * Addresses are IPv4 or IPv6 literals (an IPv6 one bare, in brackets or with %scope),
 * or host names.  The server listens on every address of both families (IPv4 alone
 * where the node has IPv6 off), or with -B/--bind ADDR on that address only; a client's
 * -B ADDR is its source address (of the peer's family).  A ring rank listens on its
 * own address in --addrs; a ring may mix the families.
 *
 * Token exchange (pingpong): one side sends a token of SIZE bytes, the partner
 * receives all of it into a buffer and sends it back; COUNT times.  Sockets are
 * non-blocking (fcntl O_NONBLOCK) and driven by poll(), as in the papers.  TCP
 * runs with TCP_NODELAY.  UDP tokens larger than one datagram are split into
 * datagrams of at most MTU-28 bytes, MTU-48 over IPv6 (the papers' "separate UDP packets"); the
 * server echoes a token only once every datagram of it has arrived; a token
 * not back within 200 ms is sent again and counted as lost.
 *
 * --window W keeps W tokens in flight (W=1 is the papers' ping-pong);
 * --mode stream sends COUNT tokens one way and waits for one acknowledgement:
 * the one-way goodput that iperf3 measures.
 *
 * (No two braces in a row in this file: the playbook ships it through a Jinja template.)
 *
 * Output: one JSON document on stdout with every round-trip sample (us), or
 * only the statistics with --stats-only.  MB = 10^6 bytes.  Exit codes: 0 ok,
 * 2 bad usage, 3 deadline passed, 4 network or file error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOKEX_VERSION 1
#define MAX_SIZE (1 << 20)
#define MAX_SIZES 64
#define MAX_CHUNKS 64
#define UDP_HDR 12
#define UDP_CLIENTS 64
#define MAGIC 0x544b5831u /* "TKX1" */

static const char *progname = "tokex";
static const char *pidmark; /* --piddir DIR: DIR/<pid> while running */

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "tokex: deadline passed, exiting\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    if (pidmark)
        unlink(pidmark);
    _exit(3);
}

static void set_deadline(long seconds)
{
    signal(SIGALRM, on_alarm);
    if (seconds > 0)
        alarm((unsigned)seconds);
}

/* s as a JSON string on stdout: quotes, backslashes and every byte outside printable
 * ASCII escaped (\u00XX stands for the byte), so a path or a host name of any bytes
 * leaves the line one valid JSON value. */
static void put_json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until_wall(double t)
{
    double d = t - now_wall();
    if (d > 0) {
        struct timespec ts = {(time_t)d, (long)((d - (time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static void nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die(4, "fcntl O_NONBLOCK: %s", strerror(errno));
}

static void wait_fd(int fd, short ev)
{
    struct pollfd p = {fd, ev, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
}

/* Non-blocking full write / read, waiting with poll() when the kernel has no room. */
static void write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait_fd(fd, POLLOUT);
        } else {
            die(4, "send: %s", w < 0 ? strerror(errno) : "closed");
        }
    }
}

static int read_all(int fd, char *buf, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, buf, n, 0);
        if (r > 0) {
            buf += r;
            n -= (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait_fd(fd, POLLIN);
        } else {
            return -1;
        }
    }
    return 0;
}

/* ---- addresses: IPv4 or IPv6, picked by the address given ---- */
struct peer {
    struct sockaddr_storage sa;
    socklen_t len;
};

/* The socket address of HOST (an IPv4 or IPv6 literal, "[v6]" too, an IPv6 one with
 * %scope; else a host name unless numeric_only) of the given family (AF_UNSPEC: any);
 * 0, else getaddrinfo's error. */
static int lookup(const char *host, int port, int socktype, int family, int numeric_only,
                  struct peer *out)
{
    char text[256], svc[8];
    size_t n = strlen(host);
    if (n >= sizeof text)
        return EAI_NONAME;
    if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
        memcpy(text, host + 1, n - 2);
        text[n - 2] = 0;
    } else {
        memcpy(text, host, n + 1);
    }
    snprintf(svc, sizeof svc, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family;
    hints.ai_socktype = socktype;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    int rc = getaddrinfo(text, svc, &hints, &res);
    if (rc == EAI_NONAME && !numeric_only) {
        hints.ai_flags = AI_NUMERICSERV; /* not a literal: a host name */
        rc = getaddrinfo(text, svc, &hints, &res);
    }
    if (rc == 0 && !res)
        rc = EAI_NONAME;
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
        out->len = res->ai_addrlen;
    }
    if (res)
        freeaddrinfo(res);
    return rc;
}

static struct peer resolve(const char *host, int port, int socktype)
{
    struct peer p;
    int rc = lookup(host, port, socktype, AF_UNSPEC, 0, &p);
    if (rc != 0)
        die(4, "cannot resolve host %s: %s", host, gai_strerror(rc));
    return p;
}

/* --bind ADDR (an address of this node) for a socket towards `to`: same family. */
static struct peer local_address(const char *addr, int port, int socktype, const struct peer *to)
{
    struct peer p;
    int family = to ? to->sa.ss_family : AF_UNSPEC;
    if (lookup(addr, port, socktype, family, 1, &p) == 0)
        return p;
    if (to && lookup(addr, port, socktype, AF_UNSPEC, 1, &p) == 0)
        die(2, "--bind %s is an %s address, the peer an %s one", addr,
            p.sa.ss_family == AF_INET6 ? "IPv6" : "IPv4", family == AF_INET6 ? "IPv6" : "IPv4");
    die(2, "not an IPv4 or IPv6 address: %s", addr);
    return p;
}

/* A socket of the address's family bound to it (SO_REUSEADDR first when reuse). */
static int bound_socket(const struct peer *at, int socktype, int reuse)
{
    char text[NI_MAXHOST] = "?";
    int one = 1, fd = socket(at->sa.ss_family, socktype, 0);
    if (fd < 0)
        die(4, "socket: %s", strerror(errno));
    if (reuse)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)&at->sa, at->len) == 0)
        return fd;
    int e = errno;
    getnameinfo((const struct sockaddr *)&at->sa, at->len, text, sizeof text, NULL, 0, NI_NUMERICHOST);
    die(4, "bind %s %s port %d: %s", socktype == SOCK_STREAM ? "tcp" : "udp", text,
        ntohs(at->sa.ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)&at->sa)->sin6_port
                                           : ((const struct sockaddr_in *)&at->sa)->sin_port),
        strerror(e));
    return -1;
}

/* A socket bound to ADDR:PORT, or without ADDR to every address of the node in both
 * families (IPv4 clients arrive as ::ffff:a.b.c.d), IPv4 alone where IPv6 is off. */
static int listen_socket(const char *addr, int port, int socktype)
{
    struct peer at;
    if (addr) {
        at = local_address(addr, port, socktype, NULL);
        return bound_socket(&at, socktype, 1);
    }
    int one = 1, zero = 0, fd = socket(AF_INET6, socktype, 0);
    if (fd >= 0) {
        struct sockaddr_in6 s6;
        memset(&s6, 0, sizeof s6);
        s6.sin6_family = AF_INET6;
        s6.sin6_port = htons((uint16_t)port);
        s6.sin6_addr = in6addr_any;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, (struct sockaddr *)&s6, sizeof s6) == 0)
            return fd;
        if (errno != EADDRNOTAVAIL && errno != EAFNOSUPPORT) /* IPv6 is there: no fallback */
            die(4, "bind %s :: port %d: %s", socktype == SOCK_STREAM ? "tcp" : "udp", port, strerror(errno));
        close(fd);
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)&at.sa;
    memset(&at, 0, sizeof at);
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    s4->sin_addr.s_addr = htonl(INADDR_ANY);
    at.len = sizeof *s4;
    return bound_socket(&at, socktype, 1);
}

static void tcp_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A socket connected to `to` (from --bind's address when given), else -1 and errno. */
static int open_connected(const struct peer *to, int socktype, const char *from)
{
    int fd;
    if (from) {
        struct peer at = local_address(from, 0, socktype, to);
        fd = bound_socket(&at, socktype, 0);
    } else if ((fd = socket(to->sa.ss_family, socktype, 0)) < 0) {
        die(4, "socket: %s", strerror(errno));
    }
    if (connect(fd, (const struct sockaddr *)&to->sa, to->len) == 0)
        return fd;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int tcp_connect(const char *host, int port, double give_up, const char *from)
{
    struct peer to = resolve(host, port, SOCK_STREAM);
    for (;;) {
        int fd = open_connected(&to, SOCK_STREAM, from);
        if (fd >= 0) {
            tcp_tune(fd);
            nonblock(fd);
            return fd;
        }
        if (now_mono() > give_up)
            die(4, "connect %s port %d: %s", host, port, strerror(errno));
        usleep(50000);
    }
}

static int tcp_listen(const char *bind_to, int port)
{
    int fd = listen_socket(bind_to, port, SOCK_STREAM);
    if (listen(fd, 64) < 0)
        die(4, "listen: %s", strerror(errno));
    return fd;
}

/* ---- session header (TCP) ---- */
struct hdr {
    uint32_t magic;
    uint32_t cmd; /* 'P' pingpong, 'S' stream, 'F' file */
    uint32_t size;
    uint32_t count;
};

static void put_hdr(int fd, uint32_t cmd, uint32_t size, uint32_t count)
{
    struct hdr h = {htonl(MAGIC), htonl(cmd), htonl(size), htonl(count)};
    write_all(fd, (const char *)&h, sizeof h);
}

/* ---- statistics ---- */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, int n, double p)
{
    /* nearest-rank percentile */
    int k = (int)(p / 100.0 * n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

static int parse_sizes(const char *s, int *out)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > MAX_SIZE)
            die(2, "bad size in --sizes '%s': each must be an integer 1..%d", s, MAX_SIZE);
        if (n >= MAX_SIZES)
            die(2, "too many sizes (max %d)", MAX_SIZES);
        out[n++] = (int)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            die(2, "bad --sizes '%s': comma-separated integers", s);
    }
    return n;
}

/* ---- options ---- */
struct opts {
    const char *host, *bind, *dir, *pidfile, *addrs, *dest, *mode, *proto;
    int port, count, warmup, window, rank, mtu, stats_only, daemon;
    long deadline, idle;
    double start_at;
    int sizes[MAX_SIZES], nsizes;
};

static void drop_pidmark(void)
{
    if (pidmark && getpid() == atoi(strrchr(pidmark, '/') + 1))
        unlink(pidmark);
}

static const char *need(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        die(2, "option %s needs a value", argv[*i]);
    return argv[++*i];
}

static long num(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end != 0 || x < lo || x > hi)
        die(2, "option %s: '%s' is not an integer in %ld..%ld", opt, v, lo, hi);
    return x;
}

static void parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->port = 5201 + 1000; /* 6201: away from iperf3's default */
    o->count = 1000;
    o->warmup = 10;
    o->window = 1;
    o->mtu = 1500;
    o->deadline = 600;
    o->idle = 120;
    o->dir = "/tmp/beonet-bench";
    o->mode = "pingpong";
    o->proto = "tcp";
    o->rank = -1;
    static const int dflt[] = {4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    memcpy(o->sizes, dflt, sizeof dflt);
    o->nsizes = 12;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-H") || !strcmp(a, "--host"))
            o->host = need(argc, argv, &i);
        else if (!strcmp(a, "-B") || !strcmp(a, "--bind"))
            o->bind = need(argc, argv, &i);
        else if (!strcmp(a, "-p") || !strcmp(a, "--port"))
            o->port = (int)num(a, need(argc, argv, &i), 1, 65534);
        else if (!strcmp(a, "-n") || !strcmp(a, "--count"))
            o->count = (int)num(a, need(argc, argv, &i), 1, 100000000);
        else if (!strcmp(a, "--warmup"))
            o->warmup = (int)num(a, need(argc, argv, &i), 0, 1000000);
        else if (!strcmp(a, "--window"))
            o->window = (int)num(a, need(argc, argv, &i), 1, 4096);
        else if (!strcmp(a, "--mtu"))
            o->mtu = (int)num(a, need(argc, argv, &i), 576, 65535);
        else if (!strcmp(a, "--rank"))
            o->rank = (int)num(a, need(argc, argv, &i), 0, 100000);
        else if (!strcmp(a, "--deadline"))
            o->deadline = num(a, need(argc, argv, &i), 0, 86400);
        else if (!strcmp(a, "--idle"))
            o->idle = num(a, need(argc, argv, &i), 1, 86400);
        else if (!strcmp(a, "--start-at"))
            o->start_at = atof(need(argc, argv, &i));
        else if (!strcmp(a, "--sizes"))
            o->nsizes = parse_sizes(need(argc, argv, &i), o->sizes);
        else if (!strcmp(a, "--dir"))
            o->dir = need(argc, argv, &i);
        else if (!strcmp(a, "--pidfile"))
            o->pidfile = need(argc, argv, &i);
        else if (!strcmp(a, "--addrs"))
            o->addrs = need(argc, argv, &i);
        else if (!strcmp(a, "--dest"))
            o->dest = need(argc, argv, &i);
        else if (!strcmp(a, "--mode"))
            o->mode = need(argc, argv, &i);
        else if (!strcmp(a, "--proto"))
            o->proto = need(argc, argv, &i);
        else if (!strcmp(a, "--out")) {
            const char *f = need(argc, argv, &i);
            if (!freopen(f, "w", stdout))
                die(4, "--out %s: %s", f, strerror(errno));
        } else if (!strcmp(a, "--piddir")) {
            /* DIR/<pid> exists while this process runs: cleanup kills exactly these */
            static char mine[4096];
            snprintf(mine, sizeof mine, "%s/%d", need(argc, argv, &i), (int)getpid());
            FILE *f = fopen(mine, "w");
            if (!f)
                die(4, "--piddir: %s: %s", mine, strerror(errno));
            fclose(f);
            pidmark = mine;
            atexit(drop_pidmark);
        } else if (!strcmp(a, "--stats-only"))
            o->stats_only = 1;
        else if (!strcmp(a, "--daemon"))
            o->daemon = 1;
        else if (a[0] == '-')
            die(2, "unknown option %s", a);
    }
    if (strcmp(o->mode, "pingpong") && strcmp(o->mode, "stream"))
        die(2, "--mode must be pingpong or stream, not '%s'", o->mode);
    if (strcmp(o->proto, "tcp") && strcmp(o->proto, "udp") && strcmp(o->proto, "both"))
        die(2, "--proto must be tcp, udp or both, not '%s'", o->proto);
}

/* ================= server ================= */

static int safe_name(const char *s)
{
    if (!*s || strlen(s) > 200 || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, ".."))
        return 0;
    return 1;
}

static void serve_tcp_session(int fd, const struct opts *o)
{
    struct hdr h;
    static char buf[MAX_SIZE];
    nonblock(fd);
    tcp_tune(fd);
    for (;;) {
        if (read_all(fd, (char *)&h, sizeof h) < 0)
            return;
        uint32_t cmd = ntohl(h.cmd), size = ntohl(h.size), count = ntohl(h.count);
        if (ntohl(h.magic) != MAGIC)
            return;
        if (cmd == 'P') {
            if (size > MAX_SIZE)
                return;
            for (uint32_t i = 0; i < count; i++) {
                if (read_all(fd, buf, size) < 0)
                    return;
                write_all(fd, buf, size);
            }
        } else if (cmd == 'S') {
            uint64_t total = (uint64_t)size * count, got = 0;
            while (got < total) {
                size_t want = total - got > sizeof buf ? sizeof buf : (size_t)(total - got);
                ssize_t r = recv(fd, buf, want, 0);
                if (r > 0)
                    got += (uint64_t)r;
                else if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    wait_fd(fd, POLLIN);
                else
                    return;
            }
            uint32_t ack[2] = {htonl((uint32_t)(got >> 32)), htonl((uint32_t)got)};
            write_all(fd, (const char *)ack, sizeof ack);
        } else if (cmd == 'F') {
            /* size = file bytes, count = length of the name that follows */
            char name[256], path[4096];
            if (count == 0 || count >= sizeof name || read_all(fd, name, count) < 0)
                return;
            name[count] = 0;
            uint32_t status = 0;
            int out = -1;
            if (safe_name(name)) {
                snprintf(path, sizeof path, "%s/%s", o->dir, name);
                out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            }
            uint32_t left = size;
            while (left > 0) {
                size_t want = left > sizeof buf ? sizeof buf : left;
                ssize_t r = recv(fd, buf, want, 0);
                if (r > 0) {
                    left -= (uint32_t)r;
                    if (out >= 0 && write(out, buf, (size_t)r) != r)
                        status = 2;
                } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
                    wait_fd(fd, POLLIN);
                } else {
                    if (out >= 0)
                        close(out);
                    return;
                }
            }
            if (out < 0)
                status = 1;
            else {
                if (fsync(out) < 0)
                    status = 2;
                close(out);
            }
            uint32_t ack = htonl(status);
            write_all(fd, (const char *)&ack, sizeof ack);
        } else {
            return;
        }
    }
}

/* Room for one IP_PKTINFO or IPV6_PKTINFO control message, aligned for it. */
union pktinfo_ctl {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo))];
};

struct udp_client {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    union pktinfo_ctl from; /* the address the client sent to: the echo leaves from it */
    size_t fromlen;
    uint32_t seq;
    uint16_t n, got;
    uint64_t have; /* bitmap of chunks received */
    double seen;
    char *buf;     /* n chunks of (UDP_HDR + payload) as received */
    uint16_t len[MAX_CHUNKS];
};

static int same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return 0;
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a, *y = (const struct sockaddr_in6 *)b;
        return x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id &&
               !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr);
    }
    const struct sockaddr_in *x = (const struct sockaddr_in *)a, *y = (const struct sockaddr_in *)b;
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
}

/* Ask for the address each datagram came to (see reply_from). */
static void want_pktinfo(int ufd)
{
    struct sockaddr_storage me;
    socklen_t len = sizeof me;
    int one = 1;
    if (getsockname(ufd, (struct sockaddr *)&me, &len) == 0 && me.ss_family == AF_INET6)
        setsockopt(ufd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    else
        setsockopt(ufd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
}

static size_t put_cmsg(union pktinfo_ctl *out, int level, int type, const void *data, size_t len)
{
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_control = out->buf;
    m.msg_controllen = sizeof out->buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), data, len);
    return CMSG_SPACE(len);
}

/* The address a datagram came to (recvmsg's control data), as sendmsg's: the echo
 * leaves from it, as the client's connected socket takes answers from that address
 * only (a node with several interfaces may route the echo out of another one). */
static size_t reply_from(struct msghdr *m, union pktinfo_ctl *out)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            if (!IN6_IS_ADDR_LINKLOCAL(&pi.ipi6_addr))
                pi.ipi6_ifindex = 0; /* the route picks the interface */
            return put_cmsg(out, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof pi);
        }
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            pi.ipi_spec_dst = pi.ipi_addr;
            pi.ipi_ifindex = 0;
            return put_cmsg(out, IPPROTO_IP, IP_PKTINFO, &pi, sizeof pi);
        }
    }
    return 0;
}

/* Send the client's token back, chunk by chunk, from the address it came to. */
static void echo_token(int ufd, struct udp_client *c, int chunk)
{
    for (int i = 0; i < c->n; i++) {
        struct iovec iov = {c->buf + (size_t)i * chunk, c->len[i]};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_name = &c->addr;
        m.msg_namelen = c->addrlen;
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = c->fromlen ? c->from.buf : NULL;
        m.msg_controllen = c->fromlen;
        while (sendmsg(ufd, &m, 0) < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ENOBUFS)
                break;
            wait_fd(ufd, POLLOUT);
        }
    }
}

/* The client a datagram is from: its slot, else the least recently seen one. */
static struct udp_client *client_of(struct udp_client *cl, const struct sockaddr_storage *from,
                                    socklen_t fl, uint32_t seq, int chunk)
{
    struct udp_client *c = &cl[0];
    for (int i = 0; i < UDP_CLIENTS; i++) {
        if (cl[i].buf && same_peer(&cl[i].addr, from))
            return &cl[i];
        if (cl[i].seen < c->seen)
            c = &cl[i];
    }
    if (!c->buf && !(c->buf = malloc((size_t)MAX_CHUNKS * chunk)))
        die(4, "out of memory");
    c->addr = *from;
    c->addrlen = fl;
    c->seq = seq + 1; /* force a reset in serve_udp */
    return c;
}

static void serve_udp(int ufd, struct udp_client *cl, int mtu)
{
    char pkt[65536];
    struct sockaddr_storage from;
    union pktinfo_ctl ctl, reply;
    struct iovec iov = {pkt, sizeof pkt};
    struct msghdr m;
    ssize_t r;
    int chunk = mtu - 28; /* IPv4's headers: IPv6 clients send smaller datagrams */
    for (;;) {
        memset(&m, 0, sizeof m);
        m.msg_name = &from;
        m.msg_namelen = sizeof from;
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        if ((r = recvmsg(ufd, &m, 0)) < UDP_HDR)
            break;
        uint32_t seq, size;
        uint16_t idx, n;
        memcpy(&seq, pkt, 4);
        memcpy(&idx, pkt + 4, 2);
        memcpy(&n, pkt + 6, 2);
        memcpy(&size, pkt + 8, 4);
        seq = ntohl(seq);
        idx = ntohs(idx);
        n = ntohs(n);
        (void)size;
        if (n == 0 || n > MAX_CHUNKS || idx >= n || r > chunk)
            continue;
        struct udp_client *c = client_of(cl, &from, m.msg_namelen, seq, chunk);
        size_t rl = reply_from(&m, &reply);
        c->fromlen = rl;
        if (rl)
            memcpy(c->from.buf, reply.buf, rl);
        c->seen = now_mono();
        if (c->seq != seq || c->n != n) {
            c->seq = seq;
            c->n = n;
            c->got = 0;
            c->have = 0;
        }
        if (!(c->have & (1ull << idx))) {
            c->have |= 1ull << idx;
            c->got++;
            memcpy(c->buf + (size_t)idx * chunk, pkt, (size_t)r);
            c->len[idx] = (uint16_t)r;
        }
        if (c->got == c->n) {
            echo_token(ufd, c, chunk); /* the whole token is in the buffer: send it back */
            c->have = 0;
            c->got = 0;
            c->seq = seq + 0x80000000u; /* a resend of this token is echoed again */
        }
    }
}

static volatile sig_atomic_t stop_server;
static void on_term(int sig)
{
    (void)sig;
    stop_server = 1;
}

static int cmd_serve(const struct opts *o)
{
    mkdir(o->dir, 0755);
    int lfd = tcp_listen(o->bind, o->port);
    int ufd = listen_socket(o->bind, o->port, SOCK_DGRAM);
    want_pktinfo(ufd);
    int big = 4 << 20;
    setsockopt(ufd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(ufd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    nonblock(ufd);
    nonblock(lfd);
    if (o->daemon) {
        pid_t pid = fork();
        if (pid < 0)
            die(4, "fork: %s", strerror(errno));
        if (pid > 0) {
            printf("{\"tool\": \"tokex\", \"serve\": %d, \"port\": %d}\n", (int)pid, o->port);
            return 0;
        }
        setsid(); /* own process group: kill -- -PID ends the server and its sessions */
        int dn = open("/dev/null", O_RDWR);
        if (dn >= 0) {
            dup2(dn, 0);
            dup2(dn, 1);
            if (dn > 2)
                close(dn);
        }
    }
    if (o->pidfile) {
        FILE *f = fopen(o->pidfile, "w");
        if (!f)
            die(4, "pidfile %s: %s", o->pidfile, strerror(errno));
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    set_deadline(o->deadline);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    static struct udp_client cl[UDP_CLIENTS];
    double last = now_mono();
    int children = 0;
    while (!stop_server) {
        struct pollfd p[2];
        p[0].fd = lfd, p[0].events = POLLIN, p[0].revents = 0;
        p[1].fd = ufd, p[1].events = POLLIN, p[1].revents = 0;
        int r = poll(p, 2, 500);
        while (waitpid(-1, NULL, WNOHANG) > 0)
            children--;
        if (r > 0) {
            last = now_mono();
            if (p[1].revents & POLLIN)
                serve_udp(ufd, cl, o->mtu);
            if (p[0].revents & POLLIN) {
                int fd = accept(lfd, NULL, NULL);
                if (fd >= 0) {
                    pid_t pid = fork();
                    if (pid == 0) {
                        close(lfd);
                        close(ufd);
                        signal(SIGTERM, SIG_DFL);
                        serve_tcp_session(fd, o);
                        _exit(0);
                    }
                    if (pid > 0)
                        children++;
                    close(fd);
                }
            }
        } else if (children <= 0 && now_mono() - last > o->idle) {
            break; /* idle: nobody will come any more */
        }
    }
    if (stop_server && getpgrp() == getpid())
        kill(0, SIGTERM); /* our sessions, when we lead the group */
    if (o->pidfile)
        unlink(o->pidfile);
    return 0;
}

/* ================= client ================= */

struct run {
    int size, count;
    double start_wall, seconds;
    long lost;
    double *rtt; /* us, count entries (pingpong) */
};

static void tcp_pingpong(int fd, struct run *R, int window, int warmup)
{
    static char sbuf[MAX_SIZE], rbuf[MAX_SIZE];
    int size = R->size;
    memset(sbuf, 'x', (size_t)size);
    /* warm-up exchanges, not counted */
    if (warmup > 0) {
        put_hdr(fd, 'P', (uint32_t)size, (uint32_t)warmup);
        for (int i = 0; i < warmup; i++) {
            write_all(fd, sbuf, (size_t)size);
            if (read_all(fd, rbuf, (size_t)size) < 0)
                die(4, "server closed the connection");
        }
    }
    put_hdr(fd, 'P', (uint32_t)size, (uint32_t)R->count);
    int n = R->count;
    double *sent = malloc(sizeof(double) * (size_t)n);
    if (!sent)
        die(4, "out of memory");
    long out_tok = 0, in_tok = 0;  /* tokens fully sent / fully received */
    size_t out_off = 0, in_off = 0;
    R->start_wall = now_wall();
    double t0 = now_mono();
    while (in_tok < n) {
        int can_send = out_tok < n && out_tok - in_tok < window;
        struct pollfd p = {fd, (short)(POLLIN | (can_send ? POLLOUT : 0)), 0};
        if (can_send) {
            if (out_off == 0)
                sent[out_tok] = now_mono();
            ssize_t w = send(fd, sbuf + out_off, (size_t)size - out_off, MSG_NOSIGNAL);
            if (w > 0) {
                out_off += (size_t)w;
                if (out_off == (size_t)size) {
                    out_off = 0;
                    out_tok++;
                    continue;
                }
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                die(4, "send: %s", strerror(errno));
            }
        }
        ssize_t r = recv(fd, rbuf + in_off, (size_t)size - in_off, 0);
        if (r > 0) {
            in_off += (size_t)r;
            if (in_off == (size_t)size) {
                R->rtt[in_tok] = (now_mono() - sent[in_tok]) * 1e6;
                in_off = 0;
                in_tok++;
            }
            continue;
        }
        if (r == 0)
            die(4, "server closed the connection");
        if (errno != EAGAIN && errno != EINTR)
            die(4, "recv: %s", strerror(errno));
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
            ;
    }
    R->seconds = now_mono() - t0;
    free(sent);
}

static void tcp_stream(int fd, struct run *R)
{
    static char sbuf[MAX_SIZE];
    memset(sbuf, 'y', (size_t)R->size);
    put_hdr(fd, 'S', (uint32_t)R->size, (uint32_t)R->count);
    R->start_wall = now_wall();
    double t0 = now_mono();
    for (int i = 0; i < R->count; i++)
        write_all(fd, sbuf, (size_t)R->size);
    uint32_t ack[2];
    if (read_all(fd, (char *)ack, sizeof ack) < 0)
        die(4, "server closed the connection");
    R->seconds = now_mono() - t0;
}

/* Token bytes in one datagram of at most MTU bytes: IPv4 and UDP headers take 28 bytes,
 * IPv6 and UDP ones 48, tokex's own UDP_HDR. */
static int udp_chunk(int mtu, int family)
{
    return mtu - (family == AF_INET6 ? 48 : 28) - UDP_HDR;
}

static void udp_exchange(int fd, struct run *R, int chunk, int mtu, int warmup)
{
    static char pkt[65536], rpkt[65536];
    int size = R->size;
    int n = (size + chunk - 1) / chunk;
    if (n > MAX_CHUNKS)
        die(2, "UDP token of %d bytes needs %d datagrams (max %d at MTU %d)", size, n, MAX_CHUNKS, mtu);
    static uint32_t seq = 1;
    long total = (long)warmup + R->count;
    double t0 = 0;
    R->lost = 0;
    for (long k = 0; k < total; k++) {
        if (k == warmup) {
            R->start_wall = now_wall();
            t0 = now_mono();
        }
        seq++;
        double ts = now_mono();
    resend:
        for (int i = 0; i < n; i++) {
            int len = i < n - 1 ? chunk : size - chunk * (n - 1);
            uint32_t s = htonl(seq), sz = htonl((uint32_t)size);
            uint16_t idx = htons((uint16_t)i), nn = htons((uint16_t)n);
            memcpy(pkt, &s, 4);
            memcpy(pkt + 4, &idx, 2);
            memcpy(pkt + 6, &nn, 2);
            memcpy(pkt + 8, &sz, 4);
            memset(pkt + UDP_HDR, 'u', (size_t)len);
            while (send(fd, pkt, (size_t)(UDP_HDR + len), 0) < 0) {
                if (errno != EAGAIN && errno != EINTR && errno != ENOBUFS)
                    die(4, "send udp: %s", strerror(errno));
                wait_fd(fd, POLLOUT);
            }
        }
        uint64_t have = 0;
        int got = 0;
        double give = now_mono() + 0.2;
        while (got < n) {
            ssize_t r = recv(fd, rpkt, sizeof rpkt, 0);
            if (r >= UDP_HDR) {
                uint32_t s;
                uint16_t idx;
                memcpy(&s, rpkt, 4);
                memcpy(&idx, rpkt + 4, 2);
                s = ntohl(s);
                idx = ntohs(idx);
                if (s == seq && idx < n && !(have & (1ull << idx))) {
                    have |= 1ull << idx;
                    got++;
                }
                continue;
            }
            if (r < 0 && errno != EAGAIN && errno != EINTR) {
                if (errno == ECONNREFUSED)
                    die(4, "udp: no tokex server on the port (connection refused)");
                die(4, "recv udp: %s", strerror(errno));
            }
            double left = give - now_mono();
            if (left <= 0) {
                if (k >= warmup)
                    R->lost++;
                if (R->lost > 1000)
                    die(4, "udp: more than 1000 tokens lost");
                give = now_mono() + 0.2;
                goto resend;
            }
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, (int)(left * 1000) + 1);
        }
        if (k >= warmup)
            R->rtt[k - warmup] = (now_mono() - ts) * 1e6;
    }
    R->seconds = now_mono() - t0;
}

static void print_run(const struct run *R, const char *proto, const char *mode, int window,
                      int stats_only, int first)
{
    double bytes = (double)R->size * R->count;
    printf("%s\n    {\"proto\": \"%s\", \"mode\": \"%s\", \"size\": %d, \"count\": %d, \"window\": %d,"
           " \"start\": %.6f, \"seconds\": %.6f, \"lost\": %ld,",
           first ? "" : ",", proto, mode, R->size, R->count, window, R->start_wall, R->seconds,
           R->lost);
    if (!strcmp(mode, "stream")) {
        printf(" \"one_way_MBps\": %.4f, \"exchange_MBps\": %.4f}", bytes / R->seconds / 1e6,
               bytes / R->seconds / 1e6);
        return;
    }
    /* pingpong: both directions carry the token, exchange = 2*size*count/time;
       ring: every hop carries it once per round, so both figures are per hop */
    double both = strcmp(mode, "ring") ? 2 * bytes : bytes;
    printf(" \"one_way_MBps\": %.4f, \"exchange_MBps\": %.4f,", bytes / R->seconds / 1e6,
           both / R->seconds / 1e6);
    double *s = malloc(sizeof(double) * (size_t)R->count);
    if (!s)
        die(4, "out of memory");
    memcpy(s, R->rtt, sizeof(double) * (size_t)R->count);
    qsort(s, (size_t)R->count, sizeof(double), cmp_double);
    printf(" \"rtt_us\": {\"min\": %.1f, \"median\": %.1f, \"p99\": %.1f, \"max\": %.1f}",
           s[0], pct(s, R->count, 50), pct(s, R->count, 99), s[R->count - 1]);
    free(s);
    if (!stats_only) {
        printf(", \"samples_us\": [");
        for (int i = 0; i < R->count; i++)
            printf(i ? ",%.1f" : "%.1f", R->rtt[i]);
        printf("]");
    }
    printf("}");
}

static int cmd_client(const struct opts *o)
{
    if (!o->host)
        die(2, "client needs -H HOST");
    set_deadline(o->deadline);
    if (o->start_at > 0)
        sleep_until_wall(o->start_at);
    int stream = !strcmp(o->mode, "stream");
    int do_tcp = strcmp(o->proto, "udp") != 0, do_udp = strcmp(o->proto, "tcp") != 0, chunk = 0;
    if (stream && do_udp)
        die(2, "--mode stream is TCP only (use --proto tcp)");
    struct peer to = resolve(o->host, o->port, SOCK_STREAM);
    if (o->bind)
        local_address(o->bind, 0, SOCK_STREAM, &to);
    if (do_udp) {
        chunk = udp_chunk(o->mtu, to.sa.ss_family);
        for (int i = 0; i < o->nsizes; i++)
            if ((o->sizes[i] + chunk - 1) / chunk > MAX_CHUNKS)
                die(2, "size %d is too large for UDP (max %d bytes at MTU %d)", o->sizes[i],
                    MAX_CHUNKS * chunk, o->mtu);
    }
    double give_up = now_mono() + 10;
    printf("{\"tool\": \"tokex\", \"version\": %d, \"peer\": ", TOKEX_VERSION);
    put_json_string(o->host);
    printf(", \"port\": %d, \"runs\": [", o->port);
    int first = 1;
    struct run R;
    for (int pi = 0; pi < 2; pi++) {
        if ((pi == 0 && !do_tcp) || (pi == 1 && !do_udp))
            continue;
        int fd;
        if (pi == 0) {
            fd = tcp_connect(o->host, o->port, give_up, o->bind);
        } else if ((fd = open_connected(&to, SOCK_DGRAM, o->bind)) < 0) {
            die(4, "udp socket to %s port %d: %s", o->host, o->port, strerror(errno));
        } else {
            int big = 4 << 20;
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
            nonblock(fd);
        }
        for (int i = 0; i < o->nsizes; i++) {
            memset(&R, 0, sizeof R);
            R.size = o->sizes[i];
            R.count = o->count;
            R.rtt = calloc((size_t)R.count, sizeof(double));
            if (!R.rtt)
                die(4, "out of memory");
            if (pi == 1)
                udp_exchange(fd, &R, chunk, o->mtu, o->warmup);
            else if (stream)
                tcp_stream(fd, &R);
            else
                tcp_pingpong(fd, &R, o->window, o->warmup);
            print_run(&R, pi == 0 ? "tcp" : "udp", stream ? "stream" : "pingpong",
                      pi == 0 ? o->window : 1, o->stats_only, first);
            first = 0;
            fflush(stdout);
            free(R.rtt);
        }
        close(fd);
    }
    printf("\n]}\n");
    return 0;
}

/* ================= ring ================= */

static int cmd_ring(const struct opts *o)
{
    if (!o->addrs || o->rank < 0)
        die(2, "ring needs --rank R and --addrs A0,A1,...");
    char *list = strdup(o->addrs), *addr[1024];
    int n = 0;
    for (char *t = strtok(list, ","); t && n < 1024; t = strtok(NULL, ","))
        addr[n++] = t;
    if (n < 2)
        die(2, "ring needs at least 2 addresses");
    if (o->rank >= n)
        die(2, "--rank %d is outside the ring of %d", o->rank, n);
    set_deadline(o->deadline);
    int lfd = tcp_listen(addr[o->rank], o->port);
    int next = tcp_connect(addr[(o->rank + 1) % n], o->port, now_mono() + 60, NULL);
    int prev = -1;
    while (prev < 0) {
        prev = accept(lfd, NULL, NULL);
        if (prev < 0 && errno != EINTR)
            die(4, "accept: %s", strerror(errno));
    }
    close(lfd);
    tcp_tune(prev);
    nonblock(prev);
    if (o->start_at > 0)
        sleep_until_wall(o->start_at); /* every rank connected and started: time together */
    static char buf[MAX_SIZE];
    memset(buf, 'r', sizeof buf);
    if (o->rank == 0)
        printf("{\"tool\": \"tokex\", \"version\": %d, \"ring\": %d, \"port\": %d, \"runs\": [",
               TOKEX_VERSION, n, o->port);
    for (int i = 0; i < o->nsizes; i++) {
        int size = o->sizes[i];
        struct run R;
        memset(&R, 0, sizeof R);
        R.size = size;
        R.count = o->count;
        R.rtt = calloc((size_t)R.count, sizeof(double));
        if (!R.rtt)
            die(4, "out of memory");
        for (int k = -o->warmup; k < o->count; k++) {
            if (o->rank == 0) {
                if (k == 0) {
                    R.start_wall = now_wall();
                }
                double t = now_mono();
                write_all(next, buf, (size_t)size);
                if (read_all(prev, buf, (size_t)size) < 0)
                    die(4, "ring broken (previous node closed)");
                if (k >= 0)
                    R.rtt[k] = (now_mono() - t) * 1e6;
            } else {
                if (read_all(prev, buf, (size_t)size) < 0)
                    die(4, "ring broken (previous node closed)");
                write_all(next, buf, (size_t)size);
            }
        }
        if (o->rank == 0) {
            for (int k = 0; k < R.count; k++)
                R.seconds += R.rtt[k] / 1e6;
            print_run(&R, "tcp", "ring", 1, o->stats_only, i == 0);
            fflush(stdout);
        }
        free(R.rtt);
    }
    if (o->rank == 0)
        printf("\n]}\n");
    else
        printf("{\"tool\": \"tokex\", \"ring\": %d, \"rank\": %d, \"ok\": true}\n", n, o->rank);
    return 0;
}

/* ================= files ================= */

/* Drop one file's pages from the page cache; return how many stay resident. */
static long evict(int fd, off_t len)
{
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (len == 0)
        return 0;
    void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    long page = sysconf(_SC_PAGESIZE), pages = (len + page - 1) / page, resident = 0;
    unsigned char *vec = malloc((size_t)pages);
    if (vec && mincore(m, (size_t)len, vec) == 0)
        for (long i = 0; i < pages; i++)
            resident += vec[i] & 1;
    else
        resident = -1;
    free(vec);
    munmap(m, (size_t)len);
    return resident;
}

static int cmd_mkfile(int argc, char **argv)
{
    if (argc < 4)
        die(2, "usage: tokex mkfile PATH BYTES");
    long bytes = num("BYTES", argv[3], 1, 1L << 32);
    int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die(4, "%s: %s", argv[2], strerror(errno));
    static char buf[1 << 16];
    uint32_t x = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
    for (long left = bytes; left > 0;) {
        size_t n = left > (long)sizeof buf ? sizeof buf : (size_t)left;
        for (size_t i = 0; i < n; i += 4) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            memcpy(buf + i, &x, n - i < 4 ? n - i : 4);
        }
        if (write(fd, buf, n) != (ssize_t)n)
            die(4, "write %s: %s", argv[2], strerror(errno));
        left -= (long)n;
    }
    long resident = evict(fd, (off_t)bytes);
    close(fd);
    printf("{\"tool\": \"tokex\", \"mkfile\": ");
    put_json_string(argv[2]);
    printf(", \"bytes\": %ld, \"resident_pages\": %ld}\n", bytes, resident);
    return 0;
}

static int open_source(const char *path, off_t *len, long *resident)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        die(4, "%s: %s", path, strerror(errno));
    *len = st.st_size;
    *resident = evict(fd, st.st_size);
    return fd;
}

static void print_copy(const char *kind, const char *src, const char *dst, off_t len,
                       long resident, double start, double secs)
{
    printf("{\"tool\": \"tokex\", \"copy\": \"%s\", \"src\": ", kind);
    put_json_string(src);
    printf(", \"dst\": ");
    put_json_string(dst);
    printf(", \"bytes\": %ld, \"resident_pages_before\": %ld, \"start\": %.6f, \"seconds\": %.6f,"
           " \"MBps\": %.4f}\n", (long)len, resident, start, secs, len / secs / 1e6);
}

static int cmd_copy(int argc, char **argv, const struct opts *o)
{
    if (argc < 4 || argv[2][0] == '-' || argv[3][0] == '-')
        die(2, "usage: tokex copy SRC DST");
    set_deadline(o->deadline);
    off_t len;
    long resident;
    int in = open_source(argv[2], &len, &resident);
    int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        die(4, "%s: %s", argv[3], strerror(errno));
    if (o->start_at > 0)
        sleep_until_wall(o->start_at);
    static char buf[1 << 16];
    double start = now_wall(), t0 = now_mono();
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)r) != r)
            die(4, "write %s: %s", argv[3], strerror(errno));
    if (r < 0 || fsync(out) < 0)
        die(4, "copy %s: %s", argv[2], strerror(errno));
    double secs = now_mono() - t0;
    close(in);
    close(out);
    print_copy("local", argv[2], argv[3], len, resident, start, secs);
    return 0;
}

static int cmd_fsend(int argc, char **argv, const struct opts *o)
{
    if (argc < 3 || argv[2][0] == '-' || !o->host || !o->dest)
        die(2, "usage: tokex fsend FILE -H HOST --dest NAME");
    if (!safe_name(o->dest))
        die(2, "--dest must be a plain file name (no '/')");
    set_deadline(o->deadline);
    off_t len;
    long resident;
    int in = open_source(argv[2], &len, &resident);
    if (len > 0xffffffffL)
        die(2, "file too large (max 4 GB)");
    int fd = tcp_connect(o->host, o->port, now_mono() + 10, o->bind);
    if (o->start_at > 0)
        sleep_until_wall(o->start_at);
    static char buf[1 << 16];
    double start = now_wall(), t0 = now_mono();
    put_hdr(fd, 'F', (uint32_t)len, (uint32_t)strlen(o->dest));
    write_all(fd, o->dest, strlen(o->dest));
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0)
        write_all(fd, buf, (size_t)r);
    if (r < 0)
        die(4, "read %s: %s", argv[2], strerror(errno));
    uint32_t ack;
    if (read_all(fd, (char *)&ack, sizeof ack) < 0)
        die(4, "server closed the connection before acknowledging the file");
    double secs = now_mono() - t0;
    if (ntohl(ack) != 0)
        die(4, "server could not write %s (status %u)", o->dest, ntohl(ack));
    close(fd);
    close(in);
    print_copy("remote", argv[2], o->dest, len, resident, start, secs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tokex serve|client|ring|mkfile|copy|fsend [options]"
                        " (see the comment at the top of tokex.c)\n");
        return argc < 2 ? 2 : 0;
    }
    signal(SIGPIPE, SIG_IGN);
    struct opts o;
    parse(argc, argv, &o);
    if (!strcmp(argv[1], "serve"))
        return cmd_serve(&o);
    if (!strcmp(argv[1], "client"))
        return cmd_client(&o);
    if (!strcmp(argv[1], "ring"))
        return cmd_ring(&o);
    if (!strcmp(argv[1], "mkfile"))
        return cmd_mkfile(argc, argv);
    if (!strcmp(argv[1], "copy"))
        return cmd_copy(argc, argv, &o);
    if (!strcmp(argv[1], "fsend"))
        return cmd_fsend(argc, argv, &o);
    die(2, "unknown command '%s' (serve|client|ring|mkfile|copy|fsend)", argv[1]);
    return 2;
}
