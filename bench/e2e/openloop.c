/*
 * The open-loop (fixed-rate) HTTP/1.1 load generator of bench:e2e, in C.
 *
 * Same contract as openloop.ts (the Node generator it replaces where a C
 * compiler is present): request i is due at t0 + i/rate whether or not the
 * earlier ones were answered; it goes out on an idle keep-alive connection,
 * or waits for the next one to free up; latency is measured from its due
 * time, so a relay (or a generator) that falls behind shows in the figures.
 *
 * Why C: on these 2-core machines the Node generator spends a whole core to
 * offer ~21k req/s, under the 32-40k that 2x a fast hour's capacity needs
 * (docs/benchmarks.md). Here a request costs one write and one read system
 * call; the loop sleeps in epoll until the next request is due or an answer
 * arrives, with the microsecond timeout of epoll_pwait2 (Linux 5.11+), so it
 * leaves the rest of its core to the upstream sink it shares it with.
 *
 *   openloop <host> <port> <rate> <seconds> <connections> <ok-status> <bodies-file> <head>
 *
 * <head> is the request line and headers up to (not including) the
 * content-length line, with CRLF line ends. <bodies-file> is bench/e2e's
 * bodies format (per record a u16 LE length and the bytes; bodies.ts). Prints E2E_START when the schedule starts, E2E_END when its
 * last request is due, then one line "E2E_JSON {...}" shaped as
 * openloop.ts's OpenLoopResult.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF 8192
#define DRAIN_MS 5000.0

struct conn {
  int fd;
  int live;
  long req;        /* request in flight, -1 when idle */
  size_t written;  /* bytes of it written so far */
  double due_ms;
  double sent_ms;
  size_t have;     /* bytes of the answer read so far */
  char buf[READ_BUF];
};

struct req {
  char *bytes;
  size_t len;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what) {
  perror(what);
  exit(2);
}

/* ---- latency samples: kept whole and sorted at the end (a few 100k at most) ---- */

struct samples {
  double *v;
  size_t n, cap;
};

static void add(struct samples *s, double us) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4096;
    s->v = realloc(s->v, s->cap * sizeof(double));
    if (!s->v) die("realloc");
  }
  s->v[s->n++] = us < 1 ? 1 : us;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile, as hdr-histogram reports it (to within its precision). */
static double at(const struct samples *s, double p) {
  if (!s->n) return 0;
  size_t k = (size_t)((p / 100.0) * s->n + 0.5);
  if (k < 1) k = 1;
  if (k > s->n) k = s->n;
  return s->v[k - 1];
}

static void print_pct(const char *name, struct samples *s, int comma) {
  qsort(s->v, s->n, sizeof(double), cmp);
  printf("\"%s\":{\"count\":%zu,\"p50_us\":%.0f,\"p90_us\":%.0f,\"p99_us\":%.0f,\"max_us\":%.0f}%s", name, s->n, at(s, 50), at(s, 90), at(s, 99),
         s->n ? s->v[s->n - 1] : 0, comma ? "," : "");
}

/* ---- the run ---- */

static struct req *reqs;
static long total;
static double t0, rate;
static struct conn *conns;
static int nconns;
static int *idle;
static int nidle;
static long *backlog; /* due requests waiting for a connection, FIFO */
static long bl_head, bl_tail;
static int ep;
static int ok_status;
static long answered, errors;
static long by_status[600];
static double max_lag_ms;
static struct samples s_acc, s_shed, s_other, s_svc;

static double due_of(long i) { return t0 + (double)i * 1000.0 / rate; }

static void fail_conn(struct conn *c) {
  if (!c->live) return;
  c->live = 0;
  if (c->req >= 0) errors++;
  c->req = -1;
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
}

static void flush(struct conn *c) {
  struct req *r = &reqs[c->req];
  while (c->written < r->len) {
    ssize_t n = write(c->fd, r->bytes + c->written, r->len - c->written);
    if (n > 0) {
      c->written += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
      epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
      return;
    }
    if (n < 0 && errno == EINTR) continue;
    fail_conn(c);
    return;
  }
}

static void send_on(struct conn *c, long i) {
  double t = now_ms();
  c->req = i;
  c->written = 0;
  c->have = 0;
  c->due_ms = due_of(i);
  c->sent_ms = t;
  if (t - c->due_ms > max_lag_ms) max_lag_ms = t - c->due_ms;
  flush(c);
}

static void release(struct conn *c) {
  c->req = -1;
  if (bl_head < bl_tail) send_on(c, backlog[bl_head++]);
  else idle[nidle++] = (int)(c - conns);
}

/*
 * The answer's end when `c->buf` holds a whole one, else 0. The relay (uWS)
 * always sends content-length; a chunked answer (other servers, the tests'
 * node:http) ends at its empty last chunk.
 */
static size_t answer_end(struct conn *c) {
  char *h = memmem(c->buf, c->have, "\r\n\r\n", 4);
  if (!h) return 0;
  size_t head = (size_t)(h - c->buf) + 4;
  for (char *p = c->buf; p < h; p++) {
    if (p[0] != '\n') continue;
    if ((size_t)(h - p) > 16 && strncasecmp(p + 1, "content-length:", 15) == 0) {
      size_t body = strtoul(p + 16, NULL, 10);
      return c->have >= head + body ? head + body : 0;
    }
    if ((size_t)(h - p) > 26 && strncasecmp(p + 1, "transfer-encoding: chunked", 26) == 0) {
      char *last = memmem(c->buf + head - 2, c->have - (head - 2), "\r\n0\r\n\r\n", 7);
      return last ? (size_t)(last - c->buf) + 7 : 0;
    }
  }
  return head;
}

static void on_readable(struct conn *c) {
  for (;;) {
    if (c->have == READ_BUF) { /* an answer larger than the buffer: not one of the relay's */
      fail_conn(c);
      return;
    }
    ssize_t n = read(c->fd, c->buf + c->have, READ_BUF - c->have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      fail_conn(c);
      return;
    }
    c->have += (size_t)n;
    size_t end = answer_end(c);
    if (!end) continue;
    if (c->req < 0) { /* bytes nobody asked for */
      fail_conn(c);
      return;
    }
    double t = now_ms();
    int status = c->have >= 12 ? atoi(c->buf + 9) : 0;
    answered++;
    if (status > 0 && status < 600) by_status[status]++;
    double us = (t - c->due_ms) * 1000.0;
    if (status == ok_status) {
      add(&s_acc, us);
      add(&s_svc, (t - c->sent_ms) * 1000.0);
    } else if (status == 503 || status == 429) add(&s_shed, us);
    else add(&s_other, us);
    /* One request in flight per connection: whatever follows the answer is an error. */
    if (c->have != end) {
      fail_conn(c);
      return;
    }
    c->have = 0;
    release(c);
    return;
  }
}

static void poll_once(double timeout_ms) {
  struct epoll_event evs[256];
  struct timespec ts = {0, 0};
  if (timeout_ms > 0) {
    ts.tv_sec = (time_t)(timeout_ms / 1000);
    ts.tv_nsec = (long)((timeout_ms - ts.tv_sec * 1000.0) * 1e6);
  }
  int n = epoll_pwait2(ep, evs, 256, &ts, NULL);
  if (n < 0 && errno != EINTR) die("epoll_pwait2");
  for (int k = 0; k < n; k++) {
    struct conn *c = evs[k].data.ptr;
    if (!c->live) continue;
    if (evs[k].events & EPOLLOUT) {
      struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
      epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
      if (c->req >= 0) flush(c);
    }
    if (c->live && (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(c);
  }
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die(path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) die("read bodies");
  fclose(f);
  *len = (size_t)n;
  return b;
}


int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: openloop host port rate seconds connections ok-status bodies-file head\n");
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]);
  rate = atof(argv[3]);
  double seconds = atof(argv[4]);
  nconns = atoi(argv[5]);
  ok_status = atoi(argv[6]);
  const char *head = argv[8];
  if (rate <= 0 || seconds <= 0 || nconns <= 0) {
    fprintf(stderr, "openloop: rate, seconds and connections must be positive\n");
    return 2;
  }

  size_t flen;
  unsigned char *file = (unsigned char *)read_file(argv[7], &flen);
  long count = 0;
  for (size_t at = 0; at + 2 <= flen; at += 2 + (size_t)(file[at] | file[at + 1] << 8)) count++;
  long want = (long)(rate * seconds + 0.5);
  total = count < want ? count : want;
  reqs = calloc((size_t)total + 1, sizeof *reqs);
  size_t off = 0, hlen = strlen(head);
  for (long i = 0; i < total; i++) {
    size_t blen = (size_t)(file[off] | file[off + 1] << 8);
    off += 2;
    if (off + blen > flen) {
      fprintf(stderr, "openloop: truncated bodies file\n");
      return 2;
    }
    char cl[64];
    int cln = snprintf(cl, sizeof cl, "content-length: %zu\r\n\r\n", blen);
    reqs[i].len = hlen + (size_t)cln + blen;
    reqs[i].bytes = malloc(reqs[i].len);
    memcpy(reqs[i].bytes, head, hlen);
    memcpy(reqs[i].bytes + hlen, cl, (size_t)cln);
    memcpy(reqs[i].bytes + hlen + cln, file + off, blen);
    off += blen;
  }
  free(file);

  ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  conns = calloc((size_t)nconns, sizeof *conns);
  idle = calloc((size_t)nconns, sizeof *idle);
  backlog = calloc((size_t)total + 1, sizeof *backlog);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("host must be an IPv4 address");
  for (int k = 0; k < nconns; k++) {
    struct conn *c = &conns[k];
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) die("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0) die("O_NONBLOCK");
    c->live = 1;
    c->req = -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    idle[nidle++] = k;
  }

  t0 = now_ms() + 5;
  printf("E2E_START\n");
  fflush(stdout);
  long next = 0;
  while (next < total) {
    double t = now_ms();
    long due = (long)((t - t0) * rate / 1000.0) + 1;
    if (due > total) due = total;
    while (next < due) {
      if (nidle > 0) send_on(&conns[idle[--nidle]], next);
      else backlog[bl_tail++] = next;
      next++;
    }
    if (next >= total) break;
    double wait = due_of(next) - now_ms();
    poll_once(wait > 0 ? wait : 0);
  }
  printf("E2E_END\n");
  fflush(stdout);
  /* Drain: the last answers, bounded so a stuck relay still ends the run. */
  double end_by = now_ms() + DRAIN_MS;
  while (answered + errors < total && now_ms() < end_by) poll_once(2);
  double end = now_ms(), last_due = due_of(total);
  double elapsed = ((end > last_due ? end : last_due) - t0) / 1000.0;
  for (int k = 0; k < nconns; k++)
    if (conns[k].live) close(conns[k].fd);

  printf("E2E_JSON {\"tool\":\"C open-loop (bench/e2e/openloop.c)\",\"targetRate\":%.0f,\"achievedRate\":%.1f,\"sent\":%ld,\"answered\":%ld,\"byStatus\":{", rate,
         answered / (elapsed > seconds ? elapsed : seconds), total, answered);
  int first = 1;
  for (int s = 0; s < 600; s++)
    if (by_status[s]) {
      printf("%s\"%d\":%ld", first ? "" : ",", s, by_status[s]);
      first = 0;
    }
  printf("},");
  print_pct("accepted", &s_acc, 1);
  print_pct("shed", &s_shed, 1);
  print_pct("other", &s_other, 1);
  print_pct("acceptedService", &s_svc, 1);
  printf("\"maxSendLagMs\":%.3f,\"errors\":%ld,\"exhausted\":%s}\n", max_lag_ms, errors, count < want ? "true" : "false");
  return 0;
}
