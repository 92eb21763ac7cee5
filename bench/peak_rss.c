/*
 * peak_rss - runs a command and prints its peak resident set size.
 *
 *   peak_rss COMMAND [ARGS...]   ->  stderr: "peak_rss_kib=N exit=S"
 *
 * Why not getrusage(RUSAGE_CHILDREN) from Python: the kernel records the
 * pre-exec high-water mark too, so a child forked from a 15 MiB interpreter
 * reports at least 15 MiB. Forked from this small program, the pre-exec
 * figure is this program's own (about 1 MiB), below any real command's.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peak_rss COMMAND [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror(argv[1]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 2;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(stderr, "peak_rss_kib=%ld exit=%d\n", ru.ru_maxrss, code);
    return code;
}
