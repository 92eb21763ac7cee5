#include "core/flags.h"

#include <string.h>

bool flag_match(const char *arg, const char *name, const char **inline_value) {
    if (arg[0] != '-')
        return false;
    arg += arg[1] == '-' ? 2 : 1;
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '\0') {
        *inline_value = NULL;
        return true;
    }
    if (arg[n] == '=') {
        *inline_value = arg + n + 1;
        return true;
    }
    return false;
}
