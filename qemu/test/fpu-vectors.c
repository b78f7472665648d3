/*
 * Host check of qemu/target/risc5/fpu.c against the RISC5 FPU vector file (op x y u v expected,
 * hex, tab separated).  Prints the first mismatches and a summary; exit status 1 on any mismatch.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../target/risc5/fpu.h"

int main(int argc, char **argv)
{
    FILE *f = fopen(argc > 1 ? argv[1] : "risc5-fpu-vectors.tsv", "r");
    char line[256], op[8];
    unsigned x, y, u, v, want;
    long total = 0, bad = 0;

    if (!f) {
        perror("vector file");
        return 2;
    }
    while (fgets(line, sizeof line, f)) {
        uint32_t got;
        if (line[0] == '#' || sscanf(line, "%7s %x %x %u %u %x", op, &x, &y, &u, &v, &want) != 6) {
            continue;
        }
        if (!strcmp(op, "FAD")) {
            got = risc5_fp_add(x, y, u, v);
        } else if (!strcmp(op, "FSB")) {
            got = risc5_fp_add(x, y ^ 0x80000000u, u, v);
        } else if (!strcmp(op, "FML")) {
            got = risc5_fp_mul(x, y);
        } else if (!strcmp(op, "FDV")) {
            got = risc5_fp_div(x, y);
        } else {
            fprintf(stderr, "unknown op %s\n", op);
            return 2;
        }
        total++;
        if (got != want) {
            if (bad++ < 10) {
                printf("MISMATCH %s %08x %08x u=%u v=%u: got %08x want %08x\n", op, x, y, u, v, got, want);
            }
        }
    }
    printf("fpu vectors: %ld checked, %ld mismatches\n", total, bad);
    return bad || total == 0 ? 1 : 0;
}
