/*
 * test_toml.c — the TOML subset reader (engine/toml.h): every construct of
 * the subset on good input, and every error path on bad input, each with
 * the line and column it must name and the words it must say. The
 * committed models.toml must read.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "toml.h"

static const pt_toml_item *find(const pt_toml_doc *d, const char *table, const char *key) {
    for (int i = 0; i < d->n_items; i++) {
        const pt_toml_table *t = &d->tables[d->items[i].table];
        char name[256] = "";
        for (int k = 0; k < t->n_parts; k++) {
            if (k) strcat(name, "/");
            strcat(name, t->parts[k]);
        }
        if (strcmp(name, table) == 0 && strcmp(d->items[i].key, key) == 0) return &d->items[i];
    }
    return NULL;
}

static void good(void) {
    const char *text =
        "\xEF\xBB\xBF# a comment\n"
        "title = \"petrel \\\"cat\\\" \\u00e9\\U0001F600 \\t\\\\\"  # trailing comment\r\n"
        "lit = 'C:\\path\\no escape'\n"
        "\n"
        "   n = -1_000\n"
        "zero = 0\n"
        "plus = +42\n"
        "big = 9223372036854775807\n"
        "small = -9223372036854775808\n"
        "f1 = 3.25\n"
        "f2 = -1e3\n"
        "f3 = 6.5E-1\n"
        "yes = true\n"
        "no = false\n"
        "empty = []\n"
        "list = [ \"a\", 'b' ,\n"
        "   # comment inside\n"
        "   \"c\", ]\n"
        "\"quoted key\" = \"\"\n"
        "'lit key' = ''\n"
        "[models.smol-135m]\n"
        "size = 98_362_432\n"
        "[ models . \"qwen2.5-0.5b\" ]\n"
        "file = \"x.gguf\"\n"
        "[models]\n"      /* a super-table defined after its child: allowed */
        "count = 2";      /* no final newline */
    pt_toml_doc d;
    pt_error err = {0};
    pt_status st = pt_toml_parse(text, strlen(text), "good.toml", &d, &err);
    CHECK(st == PT_OK, "good input: %s", err.msg);
    if (st) return;
    const pt_toml_item *it;
    CHECK((it = find(&d, "", "title")) && it->type == PT_TOML_STRING &&
              strcmp(it->str, "petrel \"cat\" \xC3\xA9\xF0\x9F\x98\x80 \t\\") == 0,
          "basic string escapes: '%s'", it ? it->str : "(missing)");
    CHECK(it && it->line == 2 && it->col == 1, "title at 2:1, got %d:%d", it ? it->line : 0, it ? it->col : 0);
    CHECK((it = find(&d, "", "lit")) && strcmp(it->str, "C:\\path\\no escape") == 0, "literal string");
    CHECK((it = find(&d, "", "n")) && it->type == PT_TOML_INT && it->i == -1000 && it->col == 4,
          "integer with underscores, column 4");
    CHECK((it = find(&d, "", "zero")) && it->i == 0, "zero");
    CHECK((it = find(&d, "", "plus")) && it->i == 42, "+42");
    CHECK((it = find(&d, "", "big")) && it->i == INT64_MAX, "int64 max");
    CHECK((it = find(&d, "", "small")) && it->i == INT64_MIN, "int64 min");
    CHECK((it = find(&d, "", "f1")) && it->type == PT_TOML_FLOAT && it->f == 3.25, "3.25");
    CHECK((it = find(&d, "", "f2")) && it->type == PT_TOML_FLOAT && it->f == -1000.0, "-1e3");
    CHECK((it = find(&d, "", "f3")) && fabs(it->f - 0.65) < 1e-12, "6.5E-1");
    CHECK((it = find(&d, "", "yes")) && it->type == PT_TOML_BOOL && it->b, "true");
    CHECK((it = find(&d, "", "no")) && it->type == PT_TOML_BOOL && !it->b, "false");
    CHECK((it = find(&d, "", "empty")) && it->type == PT_TOML_ARRAY && it->n_items == 0, "[]");
    CHECK((it = find(&d, "", "list")) && it->n_items == 3 && strcmp(it->items[0], "a") == 0 &&
              strcmp(it->items[1], "b") == 0 && strcmp(it->items[2], "c") == 0,
          "multi-line array with comment and trailing comma");
    CHECK((it = find(&d, "", "quoted key")) && strcmp(it->str, "") == 0, "quoted key, empty string");
    CHECK(find(&d, "", "lit key") != NULL, "literal key");
    CHECK((it = find(&d, "models/smol-135m", "size")) && it->i == 98362432, "[models.smol-135m] size");
    CHECK((it = find(&d, "models/qwen2.5-0.5b", "file")) && strcmp(it->str, "x.gguf") == 0,
          "quoted table part with a dot, spaces around the dots");
    CHECK((it = find(&d, "models", "count")) && it->i == 2, "super-table after its child; no final newline");
    CHECK(d.n_tables == 4, "root + 3 tables, got %d", d.n_tables);
    pt_toml_free(&d);

    /* empty input and comment-only input are empty documents */
    CHECK(pt_toml_parse("", 0, "e", &d, &err) == PT_OK && d.n_items == 0, "empty document");
    pt_toml_free(&d);
    CHECK(pt_toml_parse("# x\n\n  \t\n", 9, "e", &d, &err) == PT_OK && d.n_items == 0, "comments only");
    pt_toml_free(&d);
    /* the length bounds the text: nothing past it is read */
    CHECK(pt_toml_parse("a = 1\nb = ", 6, "e", &d, &err) == PT_OK && d.n_items == 1, "length honoured");
    pt_toml_free(&d);
}

typedef struct bad_case {
    const char *text;
    int line, col;
    const char *words;
} bad_case;

static const bad_case BAD[] = {
    {"a = 1\nb = \"x\ny\"\n", 2, 5, "unterminated string"},
    {"a = \"x", 1, 5, "unterminated string"},
    {"a = \"\"\"x\"\"\"\n", 1, 5, "multi-line strings are not supported"},
    {"a = '''x'''\n", 1, 5, "multi-line strings are not supported"},
    {"a = \"\\q\"\n", 1, 6, "unknown escape '\\q'"},
    {"a = \"\\\x01\"\n", 1, 6, "a backslash must start an escape"},
    {"a = \"\\u12\"\n", 1, 6, "wants 4 hexadecimal digits"},
    {"a = \"\\U0000004\"\n", 1, 6, "wants 8 hexadecimal digits"},
    {"a = \"\\uD800\"\n", 1, 6, "not a Unicode scalar value"},
    {"a = \"\\U00110000\"\n", 1, 6, "not a Unicode scalar value"},
    {"a = \"\\u0000\"\n", 1, 6, "\\u0000 is not allowed"},
    {"a = \"x\x01\"\n", 1, 7, "control character U+0001 in a string"},
    {"a = 'x\x7f'\n", 1, 7, "control character U+007F in a string"},
    {"a = \"\xC3\x28\"\n", 1, 6, "invalid UTF-8"},
    {"# \xFF\n", 1, 3, "invalid UTF-8"},
    {"# bell \x07\n", 1, 8, "control character U+0007 in a comment"},
    {"a = 1\rb = 2\n", 1, 6, "carriage return must be followed by a line feed"},
    {"a = 1 b = 2\n", 1, 7, "expected the end of the line, found 'b'"},
    {"= 1\n", 1, 1, "expected a key, found '='"},
    {"a.b = 1\n", 1, 2, "dotted keys are not supported"},
    {"a 1\n", 1, 3, "expected '=' after the key, found '1'"},
    {"a =\n", 1, 4, "expected a value"},
    {"a = {x = 1}\n", 1, 5, "inline tables are not supported"},
    {"a = inf\n", 1, 5, "inf and nan are not supported"},
    {"a = -nan\n", 1, 6, "inf and nan are not supported"},
    {"a = 0x1F\n", 1, 5, "hexadecimal, octal and binary"},
    {"a = 012\n", 1, 5, "leading zeros are not allowed"},
    {"a = 1__0\n", 1, 6, "'_' in a number must sit between two digits"},
    {"a = 10_\n", 1, 7, "'_' in a number must sit between two digits"},
    {"a = 1.\n", 1, 7, "expected a digit"},
    {"a = 1e\n", 1, 7, "expected a digit"},
    {"a = +\n", 1, 6, "expected a digit"},
    {"a = 1979-05-27\n", 1, 9, "dates and times are not supported"},
    {"a = 9223372036854775808\n", 1, 5, "integer out of range"},
    {"a = 1e999\n", 1, 5, "float out of range"},
    {"a = 1111111111111111111111111111111111111111111111111111111111111111111111111111111111111"
     "11111111111111111111111111111111111111111111111111\n", 1, 128, "number too long"},
    {"a = truth\n", 1, 5, "expected a value"},
    {"a = [1, 2]\n", 1, 6, "arrays may hold only strings, found '1'"},
    {"a = [\"x\" \"y\"]\n", 1, 10, "expected ',' or ']' in the array, found '\"'"},
    {"a = [\"x\",\n", 2, 1, "unterminated array"},
    {"a = [\"x\"\n", 2, 1, "unterminated array"},
    {"[[models]]\n", 1, 1, "arrays of tables"},
    {"[a\n", 1, 3, "expected '.' or ']' in the table name, found the end of the line"},
    {"[a.]\n", 1, 4, "expected a key, found ']'"},
    {"[a]\nx = 1\n[a]\n", 3, 1, "table [a] is defined twice (first at line 1)"},
    {"[a.\"b c\"]\n[a.\"b c\"]\n", 2, 1, "table [a.\"b c\"] is defined twice"},
    {"a = 1\n[a.b]\n", 2, 1, "table [a.b] clashes with the key at line 1"},
    {"[t]\nb = 1\n[t.b]\n", 3, 1, "table [t.b] clashes with the key at line 2"},
    {"[a.b]\n[x]\n", 0, 0, NULL}, /* fine: separator */
    {"x = 1\nx = 2\n", 2, 1, "duplicate key 'x' (first at line 1)"},
    {"\"x\\ny\" = 1\n'x\ny' = 1\n", 2, 1, "unterminated string"},
    {"\"a\\nb\" = 1\n\"a\\nb\" = 2\n", 2, 1, "duplicate key 'a\\nb'"},
    {"[a.b]\n[c]\n[a]\nb = 1\n", 4, 1, "key 'b' clashes with the table at line 1"},
    {"a = \"x\" # \x01\n", 1, 11, "control character U+0001 in a comment"},
    {"\xEF\xBB\xBF\xEF\xBB\xBF", 1, 1, "expected a key, found byte 0xEF"},
    {"a = 1\n\xE2\x82\xAC = 2\n", 2, 1, "expected a key, found byte 0xE2"},
    {"k = \"\xE2\x82\xAC\xE2\x82\" \n", 1, 7, "invalid UTF-8"},
};

static void bad(void) {
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const bad_case *c = &BAD[i];
        pt_toml_doc d;
        pt_error err = {0};
        pt_status st = pt_toml_parse(c->text, strlen(c->text), "bad.toml", &d, &err);
        if (!c->words) {
            CHECK(st == PT_OK, "case %zu should read: %s", i, err.msg);
            pt_toml_free(&d);
            continue;
        }
        char where[64];
        snprintf(where, sizeof where, "bad.toml:%d:%d: ", c->line, c->col);
        CHECK(st == PT_ERR_FORMAT, "case %zu: status %d", i, st);
        CHECK(strncmp(err.msg, where, strlen(where)) == 0 && strstr(err.msg, c->words),
              "case %zu: want '%s...%s', got '%s'", i, where, c->words, err.msg);
        CHECK(!strchr(err.msg, '\n'), "case %zu: message is one line", i);
        CHECK(d.n_items == 0 && d.n_tables == 0 && !d.items, "case %zu: failed document is empty", i);
    }
}

/* The limits: too many keys, tables and array items are refused. */
static void limits(void) {
    size_t cap = 64 * (PT_TOML_MAX_ITEMS + PT_TOML_MAX_TABLES + 8);
    char *text = malloc(cap);
    size_t n = 0;
    for (int i = 0; i <= PT_TOML_MAX_ITEMS; i++) n += (size_t)snprintf(text + n, cap - n, "k%d = 1\n", i);
    pt_toml_doc d;
    pt_error err = {0};
    CHECK(pt_toml_parse(text, n, "big", &d, &err) == PT_ERR_FORMAT && strstr(err.msg, "more than 4096 keys"),
          "key limit: %s", err.msg);
    n = 0;
    for (int i = 0; i <= PT_TOML_MAX_TABLES; i++) n += (size_t)snprintf(text + n, cap - n, "[t%d]\n", i);
    CHECK(pt_toml_parse(text, n, "big", &d, &err) == PT_ERR_FORMAT && strstr(err.msg, "more than 1024 tables"),
          "table limit: %s", err.msg);
    n = (size_t)snprintf(text, cap, "a = [");
    for (int i = 0; i <= PT_TOML_MAX_ARRAY; i++) n += (size_t)snprintf(text + n, cap - n, "'x',");
    n += (size_t)snprintf(text + n, cap - n, "]\n");
    CHECK(pt_toml_parse(text, n, "big", &d, &err) == PT_ERR_FORMAT && strstr(err.msg, "more than 256 items"),
          "array limit: %s", err.msg);
    free(text);
}

/* The catalog in the repository reads. */
static void models_toml(void) {
    char path[4096];
    const char *src = getenv("PETREL_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/models.toml", src ? src : ".");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    pt_toml_doc d;
    pt_error err = {0};
    CHECK(pt_toml_parse(text, n, "models.toml", &d, &err) == PT_OK, "models.toml: %s", err.msg);
    CHECK(d.n_tables > 10, "models.toml has its entries (%d tables)", d.n_tables);
    pt_toml_free(&d);
}

int main(void) {
    good();
    bad();
    limits();
    models_toml();
    return check_done("toml");
}
