/* A SIGILL handler that stands in for CPUID with the AVX-512, AVX-VNNI and AMX bits cleared.
   benchmarks/avx2_only.py replaces each CPUID instruction (0F A2) in copies of the inference
   libraries with UD2 (0F 0B, the same length); the handler runs the real CPUID, clears the
   bits and steps over the two bytes. Any other illegal instruction keeps its default fate. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#define BIT(n) (1u << (n))

static volatile uint64_t trapped;

static void hide(unsigned leaf, unsigned sub, unsigned *a, unsigned *b, unsigned *c, unsigned *d) {
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512 F, DQ, IFMA, PF, ER, CD, BW, VL */
        *b &= ~(BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31));
        /* ECX: AVX512 VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
        *c &= ~(BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14));
        /* EDX: AVX512 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512-FP16, AMX-TILE, AMX-INT8 */
        *d &= ~(BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: AVX-VNNI, AVX512-BF16, AVX-IFMA */
        *a &= ~(BIT(4) | BIT(5) | BIT(23));
    }
}

static void on_sigill(int sig, siginfo_t *info, void *context) {
    (void)info;
    greg_t *reg = ((ucontext_t *)context)->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)reg[REG_RIP];
    if (ip[0] != 0x0f || ip[1] != 0x0b) {
        signal(sig, SIG_DFL); /* a real illegal instruction: returning re-raises it */
        return;
    }
    unsigned leaf = (unsigned)reg[REG_RAX], sub = (unsigned)reg[REG_RCX], a, b, c, d;
    __cpuid_count(leaf, sub, a, b, c, d);
    hide(leaf, sub, &a, &b, &c, &d);
    reg[REG_RAX] = a; /* CPUID zero-extends into the 64-bit registers */
    reg[REG_RBX] = b;
    reg[REG_RCX] = c;
    reg[REG_RDX] = d;
    reg[REG_RIP] += 2;
    trapped++;
}

int avx2_only_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigill;
    action.sa_flags = SA_SIGINFO;
    return sigaction(SIGILL, &action, 0);
}

uint64_t avx2_only_trapped(void) { return trapped; }
