/* Prints URL-like keys for crates/bloom/cli-bench.sh: gen N [OFFSET]. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]), off = argc > 2 ? atol(argv[2]) : 0;
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    for (long i = off; i < off + n; i++)
        printf("https://host%ld.example.com/section/%ld/page-%ld.html\n", i % 1024, i % 97, i);
    return 0;
}
