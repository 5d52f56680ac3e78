/* System calls and library functions on in-flight buffers under T-NBC: right after MPI_Alltoall
 * returns, each of 21 operations reads from or writes into a range of the receive buffer (data
 * still arriving) or of the send buffer (data still leaving), in a page-aligned and in an
 * unaligned buffer. Every operation must move its full byte count with the right bytes, as it
 * would without T-NBC; what an operation writes into a buffer must stay there (no late
 * sub-message may overwrite it), and what the peers receive must be the send buffer's bytes at
 * the time of the call.
 *
 * Operations that read a buffer ("out"): fwrite (stdio, past its buffer), write, pwrite,
 * pwritev2, writev, send, sendmsg, memcpy, MPI_Send. Operations that write into a buffer ("in"):
 * fread, read, pread, preadv2, readv, recv, recvmsg, getrandom, fstat, memcpy, MPI_Recv.
 *
 * With "raw" as second argument, system calls made without the C library (syscall(2)), which no
 * interposed function can see, are tried too: only guarding in the kernel (userfaultfd) makes
 * them right.
 *
 * Usage: syscalls [BLOCK_BYTES [raw]]. Prints "OK <cases>" on rank 0; "FAIL ..." lines otherwise
 * (exit code 1). */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum where { RECV, SEND };
static int rank, size;
static long block;            /* bytes per peer */
static int fd_file = -1;      /* a scratch file */
static FILE *stream;          /* the same file through stdio */
static int sock[2];           /* a connected pair */
static long failures;

static unsigned char pat(int src, int dst, long k, int it) {
    return (unsigned char)(src * 131 + dst * 31 + k * 7 + it * 17 + (k >> 9));
}

/* What `owner`'s range [off, off+len) of `where` holds in iteration `it`: the block of peer
 * (owner+1) % size, received from it (RECV) or sent to it (SEND). `off` is from the block. */
static void expect(int owner, enum where w, long off, long len, int it, unsigned char *out) {
    int peer = (owner + 1) % size;
    for (long i = 0; i < len; i++)
        out[i] = w == RECV ? pat(peer, owner, off + i, it) : pat(owner, peer, off + i, it);
}

/* The bytes rank `r` writes into a buffer in iteration `it` ("in" operations). */
static void fresh(int r, long len, int it, unsigned char *out) {
    for (long i = 0; i < len; i++) out[i] = (unsigned char)(r * 89 + i * 13 + it * 5 + 1);
}

static void fail(const char *op, const char *where, const char *align, const char *what) {
    printf("FAIL rank %d op %s on %s (%s): %s\n", rank, op, where, align, what);
    fflush(stdout);
    failures++;
}

static void to_file(const unsigned char *p, long len) {
    if (pwrite(fd_file, p, len, 0) != len) { perror("pwrite scratch"); MPI_Abort(MPI_COMM_WORLD, 2); }
}
static void from_file(unsigned char *p, long len) {
    if (pread(fd_file, p, len, 0) != len) { perror("pread scratch"); MPI_Abort(MPI_COMM_WORLD, 2); }
}
static void drain_sock(unsigned char *p, long len) {
    long got = 0;
    while (got < len) {
        ssize_t n = read(sock[1], p + got, len - got);
        if (n <= 0) { perror("read socket"); MPI_Abort(MPI_COMM_WORLD, 2); }
        got += n;
    }
}

/* "Out" operation `op` on buf[0..len): the bytes it moved, into `got`; returns the count. */
static long out_op(int op, unsigned char *buf, long len, unsigned char *got) {
    long n = -1;
    struct iovec iov[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    switch (op) {
    case 0: rewind(stream); n = (long)fwrite(buf, 1, len, stream); fflush(stream); from_file(got, len); break;
    case 1: lseek(fd_file, 0, SEEK_SET); n = write(fd_file, buf, len); from_file(got, len); break;
    case 2: n = pwrite(fd_file, buf, len, 0); from_file(got, len); break;
    case 3: n = pwritev2(fd_file, iov, 2, 0, 0); from_file(got, len); break;
    case 4: lseek(fd_file, 0, SEEK_SET); n = writev(fd_file, iov, 2); from_file(got, len); break;
    case 5: n = send(sock[0], buf, len, 0); drain_sock(got, n > 0 ? n : 0); break;
    case 6: n = sendmsg(sock[0], &msg, 0); drain_sock(got, n > 0 ? n : 0); break;
    case 7: memcpy(got, buf, len); n = len; break;
    case 8: {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        if (rank % 2 == 0) {
            MPI_Send(buf, (int)len, MPI_BYTE, to, 7, MPI_COMM_WORLD);
            MPI_Recv(got, (int)len, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(got, (int)len, MPI_BYTE, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)len, MPI_BYTE, to, 7, MPI_COMM_WORLD);
        }
        n = len;
        break;
    }
    case 9: n = syscall(SYS_pwrite64, fd_file, buf, len, 0); from_file(got, len); break;
    }
    return n;
}
static const char *OUT_NAMES[] = {"fwrite", "write", "pwrite", "pwritev2", "writev", "send",
                                  "sendmsg", "memcpy-from", "MPI_Send", "syscall(pwrite64)"};
#define OUT_OPS 9

/* "In" operation `op` writing `src` (len bytes) into buf; returns the count. getrandom and
 * fstat choose their own bytes: they are copied back into `src`. */
static long in_op(int op, unsigned char *buf, long len, unsigned char *src) {
    long n = -1;
    struct iovec iov[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    switch (op) {
    case 0: to_file(src, len); rewind(stream); n = (long)fread(buf, 1, len, stream); break;
    case 1: to_file(src, len); lseek(fd_file, 0, SEEK_SET); n = read(fd_file, buf, len); break;
    case 2: to_file(src, len); n = pread(fd_file, buf, len, 0); break;
    case 3: to_file(src, len); n = preadv2(fd_file, iov, 2, 0, 0); break;
    case 4: to_file(src, len); lseek(fd_file, 0, SEEK_SET); n = readv(fd_file, iov, 2); break;
    case 5: {
        if (write(sock[1], src, len) != len) { perror("write socket"); MPI_Abort(MPI_COMM_WORLD, 2); }
        long got = 0;
        while (got < len) { ssize_t k = recv(sock[0], buf + got, len - got, 0); if (k <= 0) break; got += k; }
        n = got;
        break;
    }
    case 6: {
        if (write(sock[1], src, len) != len) { perror("write socket"); MPI_Abort(MPI_COMM_WORLD, 2); }
        n = recvmsg(sock[0], &msg, MSG_WAITALL);
        break;
    }
    case 7: {
        long got = 0;
        while (got < len) { ssize_t k = getrandom(buf + got, len - got, 0); if (k <= 0) break; got += k; }
        n = got;
        memcpy(src, buf, len);
        break;
    }
    case 8: {
        struct stat st, mine;
        long k = (long)sizeof st < len ? (long)sizeof st : len;
        if (fstat(fd_file, (struct stat *)buf) != 0 || fstat(fd_file, &mine) != 0) { n = -1; break; }
        memcpy(&st, buf, sizeof st);
        n = (st.st_ino == mine.st_ino && st.st_size == mine.st_size) ? len : -2;
        memcpy(src, buf, k);
        memcpy(src + k, buf + k, len - k); /* the rest is untouched by fstat */
        break;
    }
    case 9: memcpy(buf, src, len); n = len; break;
    case 11: to_file(src, len); n = syscall(SYS_pread64, fd_file, buf, len, 0); break;
    case 10: {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        unsigned char *mine = malloc(len);
        fresh(rank, len, 1000, mine);
        if (rank % 2 == 0) {
            MPI_Send(mine, (int)len, MPI_BYTE, to, 8, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)len, MPI_BYTE, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)len, MPI_BYTE, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(mine, (int)len, MPI_BYTE, to, 8, MPI_COMM_WORLD);
        }
        fresh(from, len, 1000, src);
        free(mine);
        n = len;
        break;
    }
    }
    return n;
}
static const char *IN_NAMES[] = {"fread", "read", "pread", "preadv2", "readv", "recv", "recvmsg",
                                 "getrandom", "fstat", "memcpy-to", "MPI_Recv", "syscall(pread64)"};
#define IN_OPS 11

/* Socket operations move less than a socket buffer holds (the peer end is drained only after). */
static long range_len(int op) { return op == 5 || op == 6 ? 60000 : block / 2; }

static int one_case(int in, int op, enum where w, int unaligned, int it) {
    long total = block * size;
    long shift = unaligned ? 40 : 0, inner = 2 * 4096 + (unaligned ? 13 : 0);
    unsigned char *sraw = NULL, *rraw = NULL;
    if (posix_memalign((void **)&sraw, 4096, total + 4096) || posix_memalign((void **)&rraw, 4096, total + 4096))
        MPI_Abort(MPI_COMM_WORLD, 2);
    unsigned char *sbuf = sraw + shift, *rbuf = rraw + shift;
    for (int p = 0; p < size; p++)
        for (long k = 0; k < block; k++) sbuf[p * block + k] = pat(rank, p, k, it);
    memset(rbuf, 0xEE, total);
    long len = range_len(op);
    int peer = (rank + 1) % size;
    unsigned char *target = (w == RECV ? rbuf : sbuf) + peer * block + inner;
    unsigned char *want = malloc(len), *got = malloc(len), *src = malloc(len);
    const char *wname = w == RECV ? "receive block" : "send block", *aname = unaligned ? "unaligned" : "aligned";
    char what[160];

    MPI_Alltoall(sbuf, (int)block, MPI_BYTE, rbuf, (int)block, MPI_BYTE, MPI_COMM_WORLD);
    /* The operation, while the collective's data may still be in flight. */
    long n;
    if (in) {
        fresh(rank, len, it, src);
        n = in_op(op, target, len, src);
    } else {
        n = out_op(op, target, len, got);
    }
    const char *name = in ? IN_NAMES[op] : OUT_NAMES[op];
    if (n != len) {
        snprintf(what, sizeof what, "moved %ld of %ld bytes (errno %d: %s)", n, len, errno, strerror(errno));
        fail(name, wname, aname, what);
    } else if (!in) {
        int owner = op == 8 ? (rank + size - 1) % size : rank;
        expect(owner, w, inner, len, it, want);
        if (memcmp(got, want, len) != 0) fail(name, wname, aname, "bytes differ from the buffer's");
    }
    /* Everything completes (MPI_Barrier waits for the outstanding collective). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (in && n == len && memcmp(target, src, len) != 0)
        fail(name, wname, aname, "what it wrote was overwritten");
    /* The rest of the receive buffer: every block as sent (the peers' send buffers as they were
     * at the call, whatever the peers did to them afterwards). */
    long bad = 0;
    for (int p = 0; p < size; p++)
        for (long k = 0; k < block; k++) {
            unsigned char *at = rbuf + p * block + k;
            if (in && w == RECV && at >= target && at < target + len) continue;
            if (*at != pat(p, rank, k, it)) bad++;
        }
    if (bad) {
        snprintf(what, sizeof what, "%ld received bytes wrong", bad);
        fail(name, wname, aname, what);
    }
    free(want); free(got); free(src); free(sraw); free(rraw);
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    block = argc > 1 ? atol(argv[1]) : 1 << 20;
    int raw = argc > 2 && strcmp(argv[2], "raw") == 0;
    char path[] = "/tmp/mpiscope-syscalls-XXXXXX";
    fd_file = mkstemp(path);
    if (fd_file < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sock) != 0) { perror("scratch"); MPI_Abort(MPI_COMM_WORLD, 2); }
    unlink(path);
    stream = fdopen(dup(fd_file), "w+");
    setvbuf(stream, NULL, _IOFBF, 4096); /* large transfers bypass the stdio buffer */
    int cases = 0, it = 0;
    for (int in = 0; in < 2; in++)
        for (int op = 0; op < (in ? IN_OPS : OUT_OPS) + raw; op++)
            for (int w = RECV; w <= SEND; w++)
                for (int u = 0; u < 2; u++) cases += one_case(in, op, (enum where)w, u, ++it);
    long all = 0;
    MPI_Reduce(&failures, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("OK %d\n", cases);
    fclose(stream);
    close(fd_file);
    MPI_Finalize();
    return failures || all ? 1 : 0;
}
