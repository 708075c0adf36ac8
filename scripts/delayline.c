/*
 * delayline - a link delay in user space, for kernels without the netem qdisc (scripts/cluster.sh
 * --delay). It joins two TAP devices, one in this process's network namespace (the bridge side)
 * and one in a node's namespace, and forwards Ethernet frames between them: frames the node sends
 * leave the bridge side DELAY nanoseconds after they were read, frames to the node pass at once
 * (one delay per direction of a node-to-node path: the sender's). Rate shaping stays with tc
 * (tbf on both TAP devices), which works on any kernel here.
 *
 * Why by hand: the delay is the only part of netem cluster.sh needs, the kernels that lack netem
 * also lack fq (whose earliest-departure-time mode a BPF program could drive), and a TAP relay
 * is a few dozen lines with no dependency beyond libc.
 *
 * Usage: delayline BRIDGE_TAP NETNS_PATH NODE_TAP DELAY_NS
 *   The TAP devices exist already (ip tuntap add ... mode tap); this attaches to them. Frames
 *   wait in a byte ring of 16 MiB; one that does not fit is dropped, as by a full queue. Runs
 *   until killed; frames a TAP device refuses (its link down) are dropped. The timer slack is
 *   set to 1 ns so that waits of tens of microseconds are kept.
 *
 * Real-time priority (SCHED_FIFO, where the caller may set it; else a warning and the normal
 * policy): the ranks of a job spin on the same cores, and a relay that waits for the scheduler
 * adds that wait to the delay and takes its CPU at random moments of a trial. Under SCHED_FIFO it
 * runs as soon as its timer or a frame wakes it, for the few microseconds a frame costs, and
 * sleeps otherwise (the kernel's real-time throttling still bounds it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define RING (16u << 20)
#define FRAME_MAX 65600 /* an MTU of 65,000 plus the Ethernet header, rounded */

static unsigned char ring[RING];
static size_t head, tail; /* bytes: head = oldest frame, tail = next free; ring holds tail-head */
/* Frames lost: the ring was full, or a TAP device refused a write (EIO while its link is down,
 * as before the node's interface is up). A link drops such frames too; TCP resends. */
static unsigned long dropped;

struct hdr { uint64_t due; uint32_t len; };

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_tap(const char *name) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) { perror("delayline: /dev/net/tun"); exit(1); }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) { fprintf(stderr, "delayline: attach %s: %s\n", name, strerror(errno)); exit(1); }
    return fd;
}

/* Copies n bytes into / out of the ring at offset `at` (mod RING). */
static void ring_put(size_t at, const void *p, size_t n) {
    size_t o = at % RING, first = n < RING - o ? n : RING - o;
    memcpy(ring + o, p, first);
    memcpy(ring, (const unsigned char *)p + first, n - first);
}
static void ring_get(size_t at, void *p, size_t n) {
    size_t o = at % RING, first = n < RING - o ? n : RING - o;
    memcpy(p, ring + o, first);
    memcpy((unsigned char *)p + first, ring, n - first);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: delayline BRIDGE_TAP NETNS_PATH NODE_TAP DELAY_NS\n"); return 2; }
    uint64_t delay = strtoull(argv[4], NULL, 10);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    struct sched_param rt = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0) fprintf(stderr, "delayline: no real-time priority (%s)\n", strerror(errno));
    int bridge = open_tap(argv[1]);
    int ns = open(argv[2], O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) { fprintf(stderr, "delayline: enter %s: %s\n", argv[2], strerror(errno)); return 1; }
    close(ns);
    int node = open_tap(argv[3]);
    static unsigned char frame[FRAME_MAX];
    struct pollfd fds[2] = {{.fd = node, .events = POLLIN}, {.fd = bridge, .events = POLLIN}};
    for (;;) {
        struct timespec wait, *timeout = NULL;
        if (tail != head) {
            struct hdr h;
            ring_get(head, &h, sizeof h);
            uint64_t t = now_ns(), left = h.due > t ? h.due - t : 0;
            wait.tv_sec = (time_t)(left / 1000000000u);
            wait.tv_nsec = (long)(left % 1000000000u);
            timeout = &wait;
        }
        if (ppoll(fds, 2, timeout, NULL) < 0 && errno != EINTR) { perror("delayline: ppoll"); return 1; }
        /* From the node: into the ring, due after the delay. */
        for (;;) {
            ssize_t n = read(node, frame, sizeof frame);
            if (n <= 0) break;
            struct hdr h = {now_ns() + delay, (uint32_t)n};
            if (tail - head + sizeof h + (size_t)n > RING) { dropped++; continue; } /* queue full */
            ring_put(tail, &h, sizeof h);
            ring_put(tail + sizeof h, frame, (size_t)n);
            tail += sizeof h + (size_t)n;
        }
        /* To the node: at once. */
        for (;;) {
            ssize_t n = read(bridge, frame, sizeof frame);
            if (n <= 0) break;
            if (write(node, frame, (size_t)n) < 0) dropped++;
        }
        /* Frames whose time has come, in order. */
        uint64_t t = now_ns();
        while (tail != head) {
            struct hdr h;
            ring_get(head, &h, sizeof h);
            if (h.due > t) break;
            ring_get(head + sizeof h, frame, h.len);
            if (write(bridge, frame, h.len) < 0) dropped++;
            head += sizeof h + h.len;
        }
    }
}
