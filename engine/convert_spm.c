/*
 * convert_spm.c — the pieces of a SentencePiece model (tokenizer.model),
 * read from its protobuf encoding without a protobuf library.
 *
 * Wire format (protobuf): a message is a sequence of fields, each a
 * varint key = field_number << 3 | wire_type, then by wire type:
 *   0 varint, 1 8 bytes, 2 varint length + that many bytes, 5 4 bytes
 *   (3 / 4, the deprecated groups, are refused).
 * ModelProto: field 1 (wire 2, repeated) = SentencePiece; every other
 * field (trainer / normalizer specs ...) is skipped.
 * SentencePiece: 1 piece (wire 2, UTF-8 text), 2 score (wire 5, float32
 * little-endian), 3 type (wire 0; default 1 NORMAL).
 * Every length is checked against the bytes left before use; pieces
 * holding a NUL byte are refused (they could not be a C string).
 */
#include "convert_internal.h"

#include "status.h"

#include <stdlib.h>
#include <string.h>

#define SPM_MAX_PIECES (1 << 22)

typedef struct pb {
    const uint8_t *p, *end;
} pb;

static bool varint(pb *b, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return false;
        const uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Skip or take one field's payload; for wire type 2, *sub is its bytes. */
static bool field(pb *b, uint32_t *num, uint32_t *wire, pb *sub, uint64_t *v) {
    uint64_t key;
    if (!varint(b, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX) return false;
    *num = (uint32_t)(key >> 3);
    *wire = (uint32_t)(key & 7);
    switch (*wire) {
    case 0:
        return varint(b, v);
    case 1:
        if (b->end - b->p < 8) return false;
        b->p += 8;
        return true;
    case 2: {
        uint64_t n;
        if (!varint(b, &n) || n > (uint64_t)(b->end - b->p)) return false;
        sub->p = b->p;
        sub->end = b->p + n;
        b->p += n;
        return true;
    }
    case 5:
        if (b->end - b->p < 4) return false;
        *v = (uint64_t)b->p[0] | (uint64_t)b->p[1] << 8 | (uint64_t)b->p[2] << 16 | (uint64_t)b->p[3] << 24;
        b->p += 4;
        return true;
    default:
        return false;
    }
}

void cv_spm_free(cv_spm *s) {
    for (int64_t i = 0; i < s->n; i++) free(s->pieces[i]);
    free(s->pieces);
    free(s->scores);
    free(s->types);
    memset(s, 0, sizeof *s);
}

static pt_status piece(const char *label, pb m, cv_spm *s, pt_error *err) {
    const int64_t i = s->n;
    const uint8_t *text = NULL;
    size_t len = 0;
    float score = 0;
    int32_t type = 1;
    while (m.p < m.end) {
        uint32_t num, wire;
        pb sub = {0};
        uint64_t v = 0;
        if (!field(&m, &num, &wire, &sub, &v))
            return pt_fail(err, PT_ERR_FORMAT, "%s: piece %lld is malformed", label, (long long)i);
        if (num == 1 && wire == 2) {
            text = sub.p;
            len = (size_t)(sub.end - sub.p);
        } else if (num == 2 && wire == 5) {
            const uint32_t u = (uint32_t)v;
            memcpy(&score, &u, 4);
        } else if (num == 3 && wire == 0) {
            if (v < 1 || v > 6)
                return pt_fail(err, PT_ERR_FORMAT, "%s: piece %lld has unknown type %llu", label, (long long)i,
                               (unsigned long long)v);
            type = (int32_t)v;
        }
    }
    if (text && memchr(text, 0, len))
        return pt_fail(err, PT_ERR_FORMAT, "%s: piece %lld holds a NUL byte", label, (long long)i);
    char *c = malloc(len + 1);
    if (!c) return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    if (len) memcpy(c, text, len);
    c[len] = 0;
    s->pieces[i] = c;
    s->scores[i] = score;
    s->types[i] = type;
    s->n++;
    return PT_OK;
}

pt_status cv_spm_parse(const uint8_t *data, size_t n, const char *label, cv_spm *out, pt_error *err) {
    memset(out, 0, sizeof *out);
    /* count first, so the arrays are allocated once */
    int64_t count = 0;
    pb b = {data, data + n};
    while (b.p < b.end) {
        uint32_t num, wire;
        pb sub = {0};
        uint64_t v;
        if (!field(&b, &num, &wire, &sub, &v))
            return pt_fail(err, PT_ERR_FORMAT, "%s: not a SentencePiece model (bad protobuf at byte %zu)", label,
                           (size_t)(b.p - data));
        if (num == 1 && wire == 2 && ++count > SPM_MAX_PIECES)
            return pt_fail(err, PT_ERR_FORMAT, "%s: more than %d pieces", label, SPM_MAX_PIECES);
    }
    if (count == 0) return pt_fail(err, PT_ERR_FORMAT, "%s: a SentencePiece model without pieces", label);
    out->pieces = calloc((size_t)count, sizeof *out->pieces);
    out->scores = calloc((size_t)count, sizeof *out->scores);
    out->types = calloc((size_t)count, sizeof *out->types);
    if (!out->pieces || !out->scores || !out->types) {
        cv_spm_free(out);
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    }
    b = (pb){data, data + n};
    while (b.p < b.end) {
        uint32_t num, wire;
        pb sub = {0};
        uint64_t v;
        field(&b, &num, &wire, &sub, &v); /* checked in the first pass */
        if (num != 1 || wire != 2) continue;
        pt_status st = piece(label, sub, out, err);
        if (st) {
            cv_spm_free(out);
            return st;
        }
    }
    return PT_OK;
}
