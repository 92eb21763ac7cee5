/*
 * duration.h - Go-style durations as the Go tools accept them on the
 * command line: "0", "500ms", "5s", "1.5s", "2m", "1h30m", "250us".
 */
#ifndef KGS_CORE_DURATION_H
#define KGS_CORE_DURATION_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parses `s` into nanoseconds. Units: ns, us (or µs), ms, s, m, h; a bare
 * "0" is allowed; every other number needs a unit. Fractions are allowed
 * ("1.5s"). Negative values, empty strings, unknown units, trailing garbage
 * and overflow beyond UINT64_MAX ns are KGS_EINVAL / KGS_ERANGE with a
 * message that quotes the input and shows a valid example.
 */
int duration_parse_ns(const char *s, uint64_t *out_ns, char *err, size_t errlen);

/* Formats ns compactly ("1.5s", "500ms", "0s") into buf. Returns buf. */
char *duration_format(uint64_t ns, char *buf, size_t buflen);

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (m 1..12,
 * d 1..31; H. Hinnant's days_from_civil): for wall-clock timestamps in
 * Kubernetes objects and trace files. */
int64_t civil_days(int64_t y, unsigned m, unsigned d);

#endif
