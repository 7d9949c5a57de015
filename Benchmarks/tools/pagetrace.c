// pagetrace: which code pages of a program run, for the memory investigation in docs/BENCHMARKS.md
// ("Resident memory: where the pages are"). An LD_PRELOAD library: at start it takes every permission off the
// main executable's code, and on each fault it records the address, gives the page back and, with
// PAGETRACE_STEP=N, takes it away again after one instruction (trap flag) for the page's first N entries, so
// later entries from other functions are seen too. A measuring aid only, never part of the product.
//
//   gcc -O2 -shared -fPIC -o pagetrace.so pagetrace.c
//   SWIFT_BACKTRACE=enable=no PAGETRACE_OUT=/tmp/trace PAGETRACE_STEP=50 LD_PRELOAD=./pagetrace.so sessionkeeper --version
//
// writes /tmp/trace.PID: a "base" line, then one offset from the executable's load address per entry (map them
// to functions with `nm -n`). SIGUSR1 starts a new phase: a "mark" line, and every page is taken away again with
// its entries forgotten, so what runs from then on is recorded afresh (a daemon's steady state after its start).
// SIGUSR2 writes the file and exits (for a daemon). SWIFT_BACKTRACE=enable=no keeps
// Swift's crash handler from taking SIGSEGV over.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdatomic.h>
static unsigned long lo, hi, gbase;
static int step;
static unsigned long *buf; static atomic_long n; static const long cap = 1L<<25;
static __thread unsigned long pending;
static unsigned char *entries; // per text page: entries recorded, capped

static void segv(int sig, siginfo_t *si, void *uc_) {
  ucontext_t *uc = uc_;
  unsigned long a = (unsigned long)si->si_addr;
  if (a < lo || a >= hi) { signal(SIGSEGV, SIG_DFL); return; }
  long i = atomic_fetch_add(&n, 1); if (i < cap) buf[i] = a;
  unsigned long page = a & ~4095UL;
  mprotect((void*)page, 4096, PROT_READ|PROT_EXEC);
  unsigned char *c = &entries[(page - lo) >> 12];
  if (step && *c < step) { (*c)++; pending = page; uc->uc_mcontext.gregs[REG_EFL] |= 0x100; }
}
static void trap(int sig, siginfo_t *si, void *uc_) {
  ucontext_t *uc = uc_;
  uc->uc_mcontext.gregs[REG_EFL] &= ~0x100UL;
  if (pending) { mprotect((void*)pending, 4096, PROT_NONE); pending = 0; }
}
static void dump(void) {
  const char *o = getenv("PAGETRACE_OUT"); if (!o) return;
  char path[512]; snprintf(path, sizeof path, "%s.%d", o, getpid());
  int fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0644);
  long m = atomic_load(&n); if (m > cap) m = cap;
  dprintf(fd, "base %lx\n", gbase);
  FILE *out = fdopen(fd, "w");
  for (long i = 0; i < m; i++) {
    if (buf[i]) fprintf(out, "%lx\n", buf[i] - gbase); else fprintf(out, "mark\n");
  }
  fclose(out);
}
static void term(int sig) { dump(); _exit(0); }
static void phase(int sig) {
  long i = atomic_fetch_add(&n, 1); if (i < cap) buf[i] = 0;
  memset(entries, 0, (hi - lo) >> 12);
  mprotect((void*)lo, hi - lo, PROT_NONE);
}
__attribute__((constructor)) static void init(void) {
  if (!getenv("PAGETRACE_OUT")) return;
  step = getenv("PAGETRACE_STEP") ? atoi(getenv("PAGETRACE_STEP")) : 0;
  buf = mmap(0, cap*8, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0);
  char exe[512]; ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1); exe[k] = 0;
  FILE *f = fopen("/proc/self/maps", "r"); char line[1024]; unsigned long base = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long s, e; char perm[8]; unsigned long off; char dev[16]; long ino; char name[512] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %15s %ld %511s", &s, &e, perm, &off, dev, &ino, name) >= 6 && strcmp(name, exe) == 0) {
      if (!base) base = s;
      gbase = base;
      if (perm[2] == 'x') { lo = s; hi = e; }
    }
  }
  fclose(f);
  entries = calloc((hi - lo) >> 12, 1);
  struct sigaction sa = {0}; sa.sa_sigaction = segv; sa.sa_flags = SA_SIGINFO|SA_NODEFER; sigaction(SIGSEGV, &sa, 0);
  struct sigaction st = {0}; st.sa_sigaction = trap; st.sa_flags = SA_SIGINFO; sigaction(SIGTRAP, &st, 0);
  signal(SIGUSR2, term);
  signal(SIGUSR1, phase);
  atexit(dump);
  mprotect((void*)lo, hi - lo, PROT_NONE);
  (void)base;
}
