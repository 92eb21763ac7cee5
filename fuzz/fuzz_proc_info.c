/*
 * fuzz_proc_info.c - the /proc texts gpu-metrics reads for a GPU process:
 * proc_info_parse_comm() on the bytes as /proc/<pid>/comm, and
 * proc_info_parse_pidns() on them (cut at the first NUL) as the text of a
 * /proc/self/ns/pid link. A command name that parses is NUL-terminated,
 * at most 15 bytes, holds no NUL and no final newline, and equals the
 * input less one final newline; a rejected one leaves "". A namespace that
 * parses printed back as "pid:[<ino>]" is the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/proc_info.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char comm[PROC_INFO_COMM_MAX];
    memset(comm, 0x5a, sizeof comm);
    const char *buf = (const char *)data;
    if (proc_info_parse_comm(buf, size, comm) == 0) {
        size_t n = strnlen(comm, sizeof comm);
        FUZZ_CHECK(n > 0 && n < sizeof comm);
        FUZZ_CHECK(n == size || (n + 1 == size && buf[n] == '\n'));
        FUZZ_CHECK(memcmp(comm, buf, n) == 0);
    } else {
        FUZZ_CHECK(comm[0] == '\0');
    }

    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    unsigned long long ino = 0;
    if (proc_info_parse_pidns(text, &ino)) {
        char back[64];
        snprintf(back, sizeof back, "pid:[%llu]", ino);
        /* Leading zeros are the one way to spell the same number twice. */
        FUZZ_CHECK(strcmp(back, text) == 0 || strncmp(text, "pid:[0", 6) == 0);
    }
    free(text);
    return 0;
}
