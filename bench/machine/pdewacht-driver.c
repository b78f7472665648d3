/* The reference C emulator (github.com/pdewacht/oberon-risc-emu: its risc.c, risc-fp.c, disk.c)
 * without a window, for bench/machine (c-baseline.ts builds it outside the repository with
 * gcc -O2; its one change to risc.c: risc_run returns the instructions it ran, and two accessors
 * for the mouse register and the keyboard buffer). Frames as its SDL main loop runs them: 25 MHz
 * at 60 frames a second, a frame ends early when Oberon idles, the clock advances a frame per
 * frame. Boots to the first idle frame, then either replays the input our emulator fed Oberon
 * for a command (events file: "m <mouse register>" and "k <PS/2 byte>" lines) and runs until
 * three idle frames in a row, or (--idle S) idles at 60 frames per wall second for S seconds.
 * Prints one line of JSON. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "risc.h"
#include "disk.h"

#define CPU_HZ 25000000
#define FPS 60

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static struct RISC *risc;
static uint32_t tick;
static long long instr;

/* One frame; returns 1 when it ended early (Oberon idles). */
static int frame(void) {
  risc_set_time(risc, tick);
  int n = risc_run(risc, CPU_HZ / FPS);
  instr += n;
  tick += 1000 / FPS;
  return n < CPU_HZ / FPS;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: driver disk.dsk events.txt | driver disk.dsk --idle SECONDS\n"); return 2; }
  risc = risc_new();
  risc_set_spi(risc, 1, disk_new(argv[1]));
  double t0 = cpu_ms();
  while (!frame()) {}
  double bootMs = cpu_ms() - t0;
  long long bootInstr = instr;
  for (int k = 0; k < 10; k++) frame(); /* settle, as our machine idles before the command */
  if (strcmp(argv[2], "--idle") == 0 && argc > 3) {
    /* Idle at 60 frames per wall second, as the SDL loop does (it sleeps out the frame). */
    double seconds = atof(argv[3]);
    struct timespec w0, w;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    double i0c = cpu_ms(); long long ii = instr; long frames = 0;
    for (;;) {
      frame(); frames++;
      struct timespec next = w0;
      double at = frames * 1000.0 / FPS;
      next.tv_sec += (time_t)(at / 1000); next.tv_nsec += (long)((at - (long)(at / 1000) * 1000) * 1e6);
      while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
      clock_gettime(CLOCK_MONOTONIC, &w);
      double wall = (w.tv_sec - w0.tv_sec) * 1e3 + (w.tv_nsec - w0.tv_nsec) / 1e6;
      if (wall >= seconds * 1000) {
        printf("{\"bootInstructions\":%lld,\"bootMs\":%.2f,\"idleCpuPercent\":%.3f,\"idleInstructionsPerSecond\":%.0f}\n",
               bootInstr, bootMs, (cpu_ms() - i0c) / wall * 100, (instr - ii) / wall * 1000);
        return 0;
      }
    }
  }
  FILE *f = fopen(argv[2], "r");
  if (!f) { perror(argv[2]); return 2; }
  static char kinds[100000];
  static unsigned long values[100000];
  int events = 0;
  while (events < 100000 && fscanf(f, " %c %lu", &kinds[events], &values[events]) == 2) events++;
  fclose(f);
  /* The command starts on the last event (the middle button's release): count from there. */
  double c0 = 0;
  long long i0 = 0;
  for (int e = 0; e < events; e++) {
    if (e == events - 1) { c0 = cpu_ms(); i0 = instr; }
    if (kinds[e] == 'm') {
      risc_set_mouse(risc, (uint32_t)values[e]);
      frame(); /* two frames: Oberon's loop sees every mouse state */
      frame();
    } else {
      uint8_t b = (uint8_t)values[e];
      risc_keyboard_input(risc, &b, 1);
      while (risc_key_count(risc) > 0) frame();
    }
  }
  int idle = 0;
  double lastBusyMs = c0;
  long long lastBusyInstr = i0;
  while (idle < 3) {
    if (frame()) idle++;
    else { idle = 0; lastBusyMs = cpu_ms(); lastBusyInstr = instr; }
  }
  double compileMs = lastBusyMs - c0;
  long long compileInstr = lastBusyInstr - i0;
  printf("{\"bootInstructions\":%lld,\"bootMs\":%.2f,\"compileInstructions\":%lld,\"compileMs\":%.2f,\"compileMips\":%.2f}\n",
         bootInstr, bootMs, compileInstr, compileMs, compileInstr / compileMs / 1000.0);
  return 0;
}
