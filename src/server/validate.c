/*
 * validate.c - `keda-gpu-scaler validate` (see the header).
 *
 * libyaml's document API loads each document into a node table; aliases
 * stay references, and only fixed paths are walked (kind, metadata,
 * spec.triggers[*]), so an alias bomb costs nothing. Implicit typing of
 * plain scalars follows YAML 1.1 as Kubernetes' YAML reader (go-yaml v2)
 * does: `on`, `yes` and `5` are not strings there.
 */
#include "server/validate.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/err.h"
#include "core/metadata.h"
#include "core/roles.h"
#include "core/source_url.h"
#include "core/trigger_config.h"

#define MAX_FILE_BYTES (16u * 1024 * 1024)
#define MAX_PAIRS 128

const char validate_usage_text[] =
    "Usage: keda-gpu-scaler validate [--role aggregator|standalone]\n"
    "                                [--scaler-address PATTERN... | --all] FILE...\n"
    "\n"
    "Reads Kubernetes YAML (one or more documents per file; - for standard input), finds\n"
    "the ScaledObjects and ScaledJobs, and checks every external / external-push trigger\n"
    "meant for keda-gpu-scaler exactly as the server would: each problem is printed as\n"
    "FILE:LINE: ScaledObject NAMESPACE/NAME trigger #N (TYPE): MESSAGE, with the message\n"
    "the server would answer with INVALID_ARGUMENT.\n"
    "\n"
    "Flags:\n"
    "  --role ROLE     the role that will answer KEDA: aggregator (default; podSelector\n"
    "                  and nodeSelector allowed) or standalone (they are refused)\n"
    "  --scaler-address PATTERN\n"
    "                  a trigger is ours when its scalerAddress matches the shell\n"
    "                  pattern (repeatable; default " VALIDATE_DEFAULT_ADDRESS ", the documented\n"
    "                  service names: with fullnameOverride, give yours, e.g.\n"
    "                  'gpu-scaler.*'); other external triggers are skipped and their\n"
    "                  addresses listed\n"
    "  --match TEXT    the same as --scaler-address '*TEXT*'\n"
    "  --all           check every external trigger, whatever its scalerAddress\n"
    "  --help          this text\n"
    "\n"
    "Also checked: every external trigger has a scalerAddress (KEDA needs one), metadata\n"
    "values are strings (Kubernetes refuses an unquoted number or bool there), and the\n"
    "trigger's metricType is AverageValue or Value. An input with no YAML document is an\n"
    "error, not a pass.\n"
    "\n"
    "Exit status: 0 every trigger valid, 1 problems found, 2 usage, an unreadable file\n"
    "or YAML that does not parse.\n"
    "\n"
    "Examples (in CI):\n"
    "  keda-gpu-scaler validate k8s/*.yaml\n"
    "  keda-gpu-scaler validate deploy/examples/*.yaml   # this repository's examples\n";

/* ---- YAML helpers ------------------------------------------------------------ */

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key) {
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* The scalar's text copied into buf ("" when not a scalar). */
static const char *scalar(yaml_node_t *n, char *buf, size_t cap) {
    buf[0] = '\0';
    if (n && n->type == YAML_SCALAR_NODE) {
        size_t l = n->data.scalar.length < cap - 1 ? n->data.scalar.length : cap - 1;
        memcpy(buf, n->data.scalar.value, l);
        buf[l] = '\0';
    }
    return buf;
}

static bool all_digits(const char *s, const char *set) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

/* What a plain (unquoted) scalar is in YAML 1.1, as go-yaml v2 resolves it:
 * NULL when a string, else "a number", "a bool" or "null". */
static const char *implicit_type(const yaml_node_t *n) {
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return NULL;
    char v[64];
    if (n->data.scalar.length >= sizeof v)
        return NULL;
    memcpy(v, n->data.scalar.value, n->data.scalar.length);
    v[n->data.scalar.length] = '\0';
    static const char *const bools[] = {
        "y",    "Y",    "yes",   "Yes",   "YES",   "n",  "N",  "no", "No",  "NO",  "true",
        "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
        if (strcmp(v, bools[i]) == 0)
            return "a bool";
    if (!v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
        strcmp(v, "NULL") == 0)
        return "null";
    const char *p = v + (v[0] == '+' || v[0] == '-');
    if (all_digits(p, "0123456789_") || (p[0] == '0' && (p[1] == 'x' || p[1] == 'b') &&
                                         all_digits(p + 2, "0123456789abcdefABCDEF_")))
        return "a number";
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0 ||
        strcmp(v, ".nan") == 0 || strcmp(v, ".NaN") == 0 || strcmp(v, ".NAN") == 0)
        return "a number";
    /* [0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)? and friends */
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)p[i]) || p[i] == '_')
        digits += isdigit((unsigned char)p[i++]) != 0;
    if (p[i] == '.') {
        i++;
        while (isdigit((unsigned char)p[i]) || p[i] == '_')
            digits += isdigit((unsigned char)p[i++]) != 0;
    }
    if (digits && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (p[i] == '+' || p[i] == '-')
            i++;
        size_t ed = 0;
        while (isdigit((unsigned char)p[i]))
            i++, ed++;
        if (!ed)
            return NULL;
    }
    return digits && p[i] == '\0' ? "a number" : NULL;
}

/* ---- one trigger ------------------------------------------------------------- */

typedef struct {
    const char *file;
    const validate_opts_t *o;
    FILE *out;
    validate_counts_t *c;
    char kind[32], ns[128], name[256];
} ctx_t;

static void report(ctx_t *x, const yaml_node_t *at, unsigned idx, const char *type, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
static void report(ctx_t *x, const yaml_node_t *at, unsigned idx, const char *type, const char *fmt,
                   ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Without a namespace the object goes wherever it is applied: name only. */
    fprintf(x->out, "%s:%lu: %s %s%s%s trigger #%u (%s): %s\n", x->file,
            (unsigned long)at->start_mark.line + 1, x->kind, x->ns, x->ns[0] ? "/" : "",
            x->name[0] ? x->name : "?", idx, type, msg);
    x->c->problems++;
}

static bool address_is_ours(const validate_opts_t *o, const char *addr) {
    if (o->match)
        return strstr(addr, o->match) != NULL;
    if (o->npatterns == 0)
        return fnmatch(VALIDATE_DEFAULT_ADDRESS, addr, 0) == 0;
    for (unsigned i = 0; i < o->npatterns; i++)
        if (fnmatch(o->patterns[i], addr, 0) == 0)
            return true;
    return false;
}

/* The node of the metadata key that message names first (as a whole word),
 * so the line points at it; md itself when it names none. */
static const yaml_node_t *named_key(yaml_document_t *d, yaml_node_t *md, const char *message) {
    const yaml_node_t *best = md;
    const char *best_at = NULL;
    for (yaml_node_pair_t *p = md->data.mapping.pairs.start; p < md->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE || k->data.scalar.length == 0)
            continue;
        size_t n = k->data.scalar.length;
        for (const char *at = message; (at = strstr(at, (const char *)k->data.scalar.value));
             at++) {
            /* strstr on the NUL-terminated scalar: libyaml terminates it */
            bool start = at == message || !(isalnum((unsigned char)at[-1]) || at[-1] == '_');
            bool end = !(isalnum((unsigned char)at[n]) || at[n] == '_');
            if (start && end) {
                if (!best_at || at < best_at) {
                    best_at = at;
                    best = k;
                }
                break;
            }
        }
    }
    return best;
}

static void check_trigger(ctx_t *x, yaml_document_t *d, yaml_node_t *t, unsigned idx) {
    char type[64], buf[512];
    scalar(map_get(d, t, "type"), type, sizeof type);
    if (strcmp(type, "external") != 0 && strcmp(type, "external-push") != 0)
        return;
    yaml_node_t *md = map_get(d, t, "metadata");
    scalar(map_get(d, md, "scalerAddress"), buf, sizeof buf);
    if (!buf[0]) {
        /* whose it is cannot be told, and KEDA refuses it anyway */
        x->c->triggers++;
        report(x, md ? md : t, idx, type,
               "no scalerAddress: KEDA needs it to reach an external scaler (for keda-gpu-scaler "
               "the service, e.g. keda-gpu-scaler.keda-gpu-scaler.svc:6000)");
        return;
    }
    if (!x->o->all && !address_is_ours(x->o, buf)) {
        x->c->skipped++;
        /* shown on stderr: another scaler's address may carry a password */
        char shown[sizeof x->c->skipped_addr[0]] = ""; /* zeroed whole: the counts are compared */
        source_url_redact(buf, strlen(buf), shown, sizeof shown);
        bool seen = false;
        for (unsigned i = 0; i < x->c->nskipped_addr; i++)
            seen |= strcmp(x->c->skipped_addr[i], shown) == 0;
        if (!seen && x->c->nskipped_addr < 4)
            memcpy(x->c->skipped_addr[x->c->nskipped_addr++], shown, sizeof shown);
        return;
    }
    x->c->triggers++;
    if (!md || md->type != YAML_MAPPING_NODE) {
        report(x, t, idx, type, "no metadata map: the trigger needs scalerAddress and its keys");
        return;
    }
    yaml_node_t *mt = map_get(d, t, "metricType");
    if (mt) {
        scalar(mt, buf, sizeof buf);
        if (strcmp(buf, "AverageValue") != 0 && strcmp(buf, "Value") != 0)
            report(x, mt, idx, type,
                   "the trigger's metricType %s: KEDA accepts AverageValue (the default) or "
                   "Value for external scalers",
                   buf);
    }
    metadata_pair_t pairs[MAX_PAIRS];
    size_t n = 0;
    bool bad_value = false;
    for (yaml_node_pair_t *p = md->data.mapping.pairs.start; p < md->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        yaml_node_t *v = yaml_document_get_node(d, p->value);
        if (!k || k->type != YAML_SCALAR_NODE) {
            report(x, md, idx, type, "a metadata key that is not a plain string");
            bad_value = true;
            continue;
        }
        char key[128];
        scalar(k, key, sizeof key);
        if (!v || v->type != YAML_SCALAR_NODE) {
            report(x, k, idx, type,
                   "metadata %s is a %s, not a string: KEDA's metadata is a map of strings", key,
                   v && v->type == YAML_MAPPING_NODE ? "map" : "list");
            bad_value = true;
            continue;
        }
        const char *it = implicit_type(v);
        if (it) {
            scalar(v, buf, sizeof buf);
            report(x, v, idx, type,
                   "metadata %s: %s is %s in YAML, and KEDA's metadata is a map of strings "
                   "(Kubernetes rejects it): quote it, %s: \"%s\"",
                   key, buf, it, key, buf);
            bad_value = true;
            continue;
        }
        if (n == MAX_PAIRS) {
            report(x, md, idx, type, "more than %d metadata keys", MAX_PAIRS);
            return;
        }
        pairs[n].key = (const char *)k->data.scalar.value;
        pairs[n].key_len = k->data.scalar.length;
        pairs[n].value = (const char *)v->data.scalar.value;
        pairs[n].value_len = v->data.scalar.length;
        n++;
    }
    if (bad_value)
        return;
    static trigger_config_t cfg; /* ~25 KiB: off the stack */
    char err[1024];
    if (trigger_config_parse(pairs, n, &cfg, err, sizeof err) != 0) {
        report(x, named_key(d, md, err), idx, type, "%s", err);
        return;
    }
    /* The server's own rules (core/roles.h), so validate and the server agree. */
    const role_caps_t *caps = role_caps(
        x->o->role == VALIDATE_ROLE_STANDALONE ? KGS_ROLE_STANDALONE : KGS_ROLE_AGGREGATOR);
    if (role_check_trigger(caps, &cfg, true, err, sizeof err) != ROLE_CHECK_OK)
        report(x, named_key(d, md, err), idx, type, "%s", err);
}

/* ---- documents --------------------------------------------------------------- */

static void check_document(ctx_t *x, yaml_document_t *d) {
    yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root || root->type != YAML_MAPPING_NODE)
        return;
    char api[128];
    scalar(map_get(d, root, "kind"), x->kind, sizeof x->kind);
    scalar(map_get(d, root, "apiVersion"), api, sizeof api);
    if ((strcmp(x->kind, "ScaledObject") != 0 && strcmp(x->kind, "ScaledJob") != 0) ||
        strncmp(api, "keda.sh/", 8) != 0)
        return;
    x->c->objects++;
    yaml_node_t *meta = map_get(d, root, "metadata");
    scalar(map_get(d, meta, "namespace"), x->ns, sizeof x->ns);
    scalar(map_get(d, meta, "name"), x->name, sizeof x->name);
    yaml_node_t *triggers = map_get(d, map_get(d, root, "spec"), "triggers");
    if (!triggers || triggers->type != YAML_SEQUENCE_NODE)
        return;
    unsigned idx = 0;
    for (yaml_node_item_t *it = triggers->data.sequence.items.start;
         it < triggers->data.sequence.items.top; it++) {
        yaml_node_t *t = yaml_document_get_node(d, *it);
        if (t && t->type == YAML_MAPPING_NODE)
            check_trigger(x, d, t, idx);
        idx++;
    }
}

int validate_text(const char *name, const char *text, size_t len, const validate_opts_t *opts,
                  FILE *out, validate_counts_t *counts, char *err, size_t errlen) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ctx_t x = {.file = name, .o = opts, .out = out, .c = counts};
    int rc = 0;
    unsigned docs = 0;
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, "%s:%lu:%lu: YAML: %s%s%s", name,
                            (unsigned long)parser.problem_mark.line + 1,
                            (unsigned long)parser.problem_mark.column + 1,
                            parser.problem ? parser.problem : "syntax error",
                            parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        if (!yaml_document_get_root_node(&doc)) { /* end of the stream */
            yaml_document_delete(&doc);
            break;
        }
        counts->documents++;
        docs++;
        check_document(&x, &doc);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    if (rc == 0 && docs == 0)
        rc = kgs_seterr(err, errlen, KGS_EINVAL,
                        "%s: empty input: no YAML document (a CI gate that checks nothing "
                        "passes nothing)",
                        name);
    return rc;
}

/* ---- the command --------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        kgs_seterr(err, errlen, KGS_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= MAX_FILE_BYTES) {
                kgs_seterr(err, errlen, KGS_ERANGE, "%s: larger than %u bytes", path,
                           MAX_FILE_BYTES);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        kgs_seterr(err, errlen, KGS_EIO, "%s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf && (!err || !err[0])) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "%s: out of memory", path);
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

int validate_main(int argc, char **argv) {
    validate_opts_t o = {.role = VALIDATE_ROLE_AGGREGATOR};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(validate_usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--role") == 0 && i + 1 < argc) {
            const char *r = argv[++i];
            if (strcmp(r, "aggregator") == 0)
                o.role = VALIDATE_ROLE_AGGREGATOR;
            else if (strcmp(r, "standalone") == 0)
                o.role = VALIDATE_ROLE_STANDALONE;
            else {
                fprintf(stderr,
                        "validate: invalid --role \"%s\": must be aggregator or standalone (the "
                        "agent role does not answer KEDA)\n",
                        r);
                return 2;
            }
        } else if (strcmp(a, "--match") == 0 && i + 1 < argc) {
            o.match = argv[++i];
        } else if (strcmp(a, "--scaler-address") == 0 && i + 1 < argc) {
            if (o.npatterns == sizeof o.patterns / sizeof o.patterns[0]) {
                fprintf(stderr, "validate: at most %zu --scaler-address patterns\n",
                        sizeof o.patterns / sizeof o.patterns[0]);
                return 2;
            }
            o.patterns[o.npatterns++] = argv[++i];
        } else if (strcmp(a, "--all") == 0) {
            o.all = true;
        } else if (strcmp(a, "--") == 0) {
            first = i + 1;
            break;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "validate: unknown flag %s (keda-gpu-scaler validate --help)\n", a);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "validate: no FILE given (keda-gpu-scaler validate --help)\n");
        return 2;
    }
    if (o.all && (o.match || o.npatterns)) {
        fprintf(stderr, "validate: --all and %s exclude each other\n",
                o.match ? "--match" : "--scaler-address");
        return 2;
    }
    if (o.match && o.npatterns) {
        fprintf(stderr, "validate: --match TEXT is --scaler-address '*TEXT*': give one of them\n");
        return 2;
    }
    validate_counts_t c = {0};
    int status = 0;
    for (int i = first; i < argc; i++) {
        char err[1024] = "";
        size_t len;
        char *text = read_all(argv[i], &len, err, sizeof err);
        if (!text) {
            fprintf(stderr, "validate: %s\n", err);
            status = 2;
            continue;
        }
        if (validate_text(argv[i], text, len, &o, stdout, &c, err, sizeof err) != 0) {
            fprintf(stderr, "validate: %s\n", err);
            status = 2;
        }
        free(text);
    }
    fprintf(stderr,
            "validate: %d file(s), %u ScaledObject/ScaledJob(s), %u trigger(s) checked, %u "
            "problem(s)%s",
            argc - first, c.objects, c.triggers, c.problems, c.skipped ? "" : "\n");
    if (c.skipped) {
        fprintf(stderr, "; %u external trigger(s) for other scalers skipped (scalerAddress ",
                c.skipped);
        for (unsigned i = 0; i < c.nskipped_addr; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", c.skipped_addr[i]);
        fprintf(stderr, "%s; ours are %s%s: --scaler-address PATTERN or --all checks them)\n",
                c.skipped > c.nskipped_addr ? ", ..." : "", o.match ? "*" : "",
                o.match       ? o.match
                : o.npatterns ? o.patterns[0]
                              : VALIDATE_DEFAULT_ADDRESS);
    }
    if (status == 0 && c.problems)
        status = 1;
    return status;
}
