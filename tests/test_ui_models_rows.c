/*
 * test_ui_models_rows.c — the Models screen's logic without a terminal
 * (ui/models_rows.c): the fits-in-RAM hint's thresholds, MemAvailable
 * from /proc/meminfo text, a catalog entry's state on disk (installed,
 * partial with its .part's size, bundled, absent), the rows (headings,
 * local files matched to their catalog entries, the selection skipping
 * headings), the quantize form's default output names and its checks,
 * and ETA text. The catalog is real models.toml text read by the engine;
 * the models folder a temporary one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "models_rows.h"

static void write_file(const char *path, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (!f) return;
    for (size_t i = 0; i < n; i++) fputc('x', f);
    fclose(f);
}

static void test_fit(void) {
    const uint64_t M = 1u << 20;
    CHECK(pt_fit_hint(100 * M, 1000 * M) == PT_FIT_YES, "100M in 1000M fits");
    CHECK(pt_fit_hint(800 * M, 1000 * M) == PT_FIT_YES, "800M + a quarter = 1000M: fits exactly");
    CHECK(pt_fit_hint(801 * M, 1000 * M) == PT_FIT_TIGHT, "801M + a quarter > 1000M: tight");
    CHECK(pt_fit_hint(1000 * M, 1000 * M) == PT_FIT_TIGHT, "the weights exactly: tight");
    CHECK(pt_fit_hint(1000 * M + 1, 1000 * M) == PT_FIT_NO, "a byte more than free: too big");
    CHECK(pt_fit_hint(0, 1000 * M) == PT_FIT_UNKNOWN, "size not known");
    CHECK(pt_fit_hint(100 * M, 0) == PT_FIT_UNKNOWN, "free memory not known");
    CHECK(!strcmp(pt_fit_name(PT_FIT_YES), "fits") && !strcmp(pt_fit_name(PT_FIT_TIGHT), "tight") &&
              !strcmp(pt_fit_name(PT_FIT_NO), "too big") && !strcmp(pt_fit_name(PT_FIT_UNKNOWN), "?"),
          "hint names");
}

static void test_meminfo(void) {
    const char *t = "MemTotal:       16318504 kB\nMemFree:         1032452 kB\n"
                    "MemAvailable:    9876543 kB\nBuffers:          123456 kB\n";
    CHECK(pt_meminfo_available(t, strlen(t)) == 9876543ull * 1024, "MemAvailable in kB -> bytes");
    const char *none = "MemTotal: 1 kB\nMemFree: 2 kB\n";
    CHECK(pt_meminfo_available(none, strlen(none)) == 0, "no MemAvailable line: 0");
    const char *cut = "MemTotal: 1 kB\nMemAvailable:";
    CHECK(pt_meminfo_available(cut, strlen(cut)) == 0, "a line cut after the key: 0");
    const char *junk = "MemAvailable:   abc kB\n";
    CHECK(pt_meminfo_available(junk, strlen(junk)) == 0, "no digits: 0");
    /* the prefix only counts at a line start, and only this key */
    const char *other = "XMemAvailable: 5 kB\nMemAvailableX: 6 kB\n";
    CHECK(pt_meminfo_available(other, strlen(other)) == 0, "other keys are not it");
    /* this machine has one (Linux >= 3.14) */
    CHECK(pt_mem_available() > 0, "/proc/meminfo gives MemAvailable");
}

static const char catalog_text[] =
    "[models.alpha]\n"
    "source = \"url\"\nurl = \"http://127.0.0.1:1/a.gguf\"\nlocal = \"alpha.gguf\"\nsize = 1000\n"
    "[models.beta]\n"
    "source = \"hf\"\nrepo = \"org/beta\"\nfile = \"sub/beta-q4_0.gguf\"\napprox_mb = 250\n"
    "[models.gamma]\n"
    "source = \"url\"\nurl = \"http://127.0.0.1:1/g.gguf\"\nlocal = \"gamma.gguf\"\n"
    "[models.demo]\n"
    "kind = \"image\"\nsource = \"bundled\"\npath = \"assets/demo.gguf\"\nfile = \"demo.gguf\"\n";

static void test_rows(void) {
    char dir[] = "/tmp/petrel-rows-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temporary folder");
    char path[512];
    /* alpha installed, beta partial (400 bytes), gamma absent; plus a
     * local file no entry names */
    snprintf(path, sizeof path, "%s/alpha.gguf", dir);
    write_file(path, 1000);
    snprintf(path, sizeof path, "%s/beta-q4_0.gguf.part", dir);
    write_file(path, 400);
    snprintf(path, sizeof path, "%s/other.gguf", dir);
    write_file(path, 10);

    pt_catalog *c = NULL;
    pt_error err = {0};
    CHECK(pt_catalog_new(&c, &err) == PT_OK, "catalog");
    CHECK(pt_catalog_add_text(c, catalog_text, strlen(catalog_text), "test.toml", &err) == PT_OK, "read: %s",
          err.msg);

    uint64_t part = 99;
    CHECK(pt_cat_state_of(pt_catalog_find(c, "alpha"), dir, &part) == PT_CAT_INSTALLED && part == 0, "alpha installed");
    CHECK(pt_cat_state_of(pt_catalog_find(c, "beta"), dir, &part) == PT_CAT_PARTIAL && part == 400,
          "beta partial, 400 bytes (got %llu)", (unsigned long long)part);
    CHECK(pt_cat_state_of(pt_catalog_find(c, "gamma"), dir, &part) == PT_CAT_ABSENT && part == 0, "gamma absent");
    CHECK(pt_cat_state_of(pt_catalog_find(c, "demo"), dir, NULL) == PT_CAT_BUNDLED, "demo bundled");
    bool approx;
    CHECK(pt_cat_bytes(pt_catalog_find(c, "alpha"), &approx) == 1000 && !approx, "exact size");
    CHECK(pt_cat_bytes(pt_catalog_find(c, "beta"), &approx) == 250000000ull && approx, "approx_mb, MB");
    CHECK(pt_cat_bytes(pt_catalog_find(c, "gamma"), &approx) == 0 && !approx, "size not known");

    /* the local list as the screen scans it (models.c): DATA/models */
    char data[300];
    snprintf(data, sizeof data, "%s/data", dir);
    mkdir(data, 0755);
    char models[320];
    snprintf(models, sizeof models, "%s/models", data);
    mkdir(models, 0755);
    snprintf(path, sizeof path, "%s/alpha.gguf", models);
    write_file(path, 1000);
    snprintf(path, sizeof path, "%s/zeta.gguf", models);
    write_file(path, 5);
    snprintf(path, sizeof path, "%s/gamma.gguf.part", models);
    write_file(path, 3);
    pt_model_list l = {0};
    pt_models_scan(&l, data, "/nonexistent/elsewhere.gguf");
    CHECK(l.n == 2, "two local files (.part and a missing extra ignored): %d", l.n);

    pt_mrows r = {0};
    CHECK(pt_mrows_build(&r, &l, c, models), "rows built");
    /* heading, alpha, zeta, heading, alpha, beta, gamma, demo */
    CHECK(r.n == 8, "8 rows, got %d", r.n);
    if (r.n == 8) {
        CHECK(r.items[0].kind == PT_MROW_HEADER && r.items[0].index == 0, "local heading first");
        CHECK(r.items[1].kind == PT_MROW_LOCAL && !strcmp(l.items[r.items[1].index].name, "alpha.gguf"), "alpha local");
        CHECK(r.items[1].catalog == 0, "alpha.gguf is the alpha entry's file");
        CHECK(r.items[2].kind == PT_MROW_LOCAL && r.items[2].catalog == -1, "zeta is no entry's");
        CHECK(r.items[3].kind == PT_MROW_HEADER && r.items[3].index == 1, "catalog heading");
        CHECK(r.items[4].kind == PT_MROW_CATALOG && r.items[4].state == PT_CAT_INSTALLED, "alpha installed");
        CHECK(r.items[5].state == PT_CAT_ABSENT, "beta absent here (its .part is in the other folder)");
        CHECK(r.items[6].state == PT_CAT_PARTIAL && r.items[6].part_bytes == 3, "gamma partial, 3 bytes");
        CHECK(r.items[7].state == PT_CAT_BUNDLED, "demo bundled");
        /* selection skips headings */
        CHECK(pt_mrows_select(&r, 0, 0) == 1, "heading 0 -> first local row");
        CHECK(pt_mrows_select(&r, 2, 1) == 4, "down from zeta skips the heading");
        CHECK(pt_mrows_select(&r, 4, -1) == 2, "up from the first catalog row skips the heading");
        CHECK(pt_mrows_select(&r, 1, -1) == -1, "nothing above the first row");
        CHECK(pt_mrows_select(&r, 7, 1) == -1, "nothing below the last");
        CHECK(pt_mrows_select(&r, 99, 0) == 7, "an index past the end is clamped");
    }
    /* no catalog: the local section only */
    CHECK(pt_mrows_build(&r, &l, NULL, models) && r.n == 3, "no catalog: heading and 2 files (%d)", r.n);
    /* an empty list and no catalog: a heading alone, nothing selectable */
    pt_model_list empty = {0};
    CHECK(pt_mrows_build(&r, &empty, NULL, models) && r.n == 1, "empty: the heading");
    CHECK(pt_mrows_select(&r, 0, 0) == -1 && pt_mrows_select(&r, 0, -1) == -1, "empty: nothing to select");
    pt_mrows_free(&r);
    pt_models_free(&l);
    pt_catalog_free(c);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "clean up");
}

static void test_out_names(void) {
    static const struct { const char *in, *type, *want; } cases[] = {
        {"SmolLM2-135M-Instruct.Q4_1.gguf", "Q8_0", "SmolLM2-135M-Instruct.Q8_0.gguf"},
        {"gemma-3-270m-q4_k_m.gguf", "Q8_0", "gemma-3-270m-q8_0.gguf"},         /* lower case kept */
        {"Qwen3-0.6B-Q4_K_M.gguf", "Q5_K_M", "Qwen3-0.6B-Q5_K_M.gguf"},         /* Q4_K_M whole, not Q4_K */
        {"model-f16.gguf", "Q4_0", "model-q4_0.gguf"},
        {"model.F32.gguf", "BF16", "model.BF16.gguf"},
        {"tiny_llama.gguf", "Q8_0", "tiny_llama.Q8_0.gguf"},                    /* no tag: added */
        {"plain", "Q4_0", "plain.Q4_0.gguf"},                                    /* no .gguf */
        {"q4_0-first.Q8_0.gguf", "Q6_K", "q4_0-first.Q6_K.gguf"},               /* the last tag */
        {"notaq4_0x.gguf", "Q8_0", "notaq4_0x.Q8_0.gguf"},                       /* inside a word: no tag */
        {"m-Q4_0_4_4.gguf", "Q8_0", "m-Q4_0_4_4.Q8_0.gguf"},                     /* Q4_0 then '_': not a tag */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[256];
        pt_quant_out_name(cases[i].in, cases[i].type, out, sizeof out);
        CHECK(!strcmp(out, cases[i].want), "%s to %s: want %s, got %s", cases[i].in, cases[i].type, cases[i].want, out);
    }
    char small[8];
    pt_quant_out_name("SmolLM2-135M-Instruct.Q4_1.gguf", "Q8_0", small, sizeof small);
    CHECK(strlen(small) == 7, "a small buffer is cut, NUL-terminated");

    CHECK(pt_out_name_problem("x.Q8_0.gguf") == NULL, "a good name");
    CHECK(pt_out_name_problem("") != NULL, "empty");
    CHECK(pt_out_name_problem("../x.gguf") != NULL, "a path");
    CHECK(pt_out_name_problem("sub/x.gguf") != NULL, "a path");
    CHECK(pt_out_name_problem(".x.gguf") != NULL, "hidden");
    CHECK(pt_out_name_problem("x\033[2J.gguf") != NULL, "an escape");
    CHECK(pt_out_name_problem("x.bin") != NULL, "not .gguf");
    CHECK(pt_out_name_problem(".gguf") != NULL, "only the extension");
    char longname[260];
    memset(longname, 'a', 250);
    memcpy(longname + 250, ".gguf", 6);
    CHECK(pt_out_name_problem(longname) != NULL, "too long");
}

static void test_eta(void) {
    char b[32];
    pt_fmt_eta(0, b, sizeof b);      CHECK(!strcmp(b, "0:00"), "0 s: %s", b);
    pt_fmt_eta(7.4, b, sizeof b);    CHECK(!strcmp(b, "0:07"), "7.4 s: %s", b);
    pt_fmt_eta(754, b, sizeof b);    CHECK(!strcmp(b, "12:34"), "754 s: %s", b);
    pt_fmt_eta(3723, b, sizeof b);   CHECK(!strcmp(b, "1:02:03"), "3723 s: %s", b);
    pt_fmt_eta(-1, b, sizeof b);     CHECK(!strcmp(b, "?"), "unknown: %s", b);
    pt_fmt_eta(1e12, b, sizeof b);   CHECK(!strcmp(b, "?"), "absurd: %s", b);
}

int main(void) {
    test_fit();
    test_meminfo();
    test_rows();
    test_out_names();
    test_eta();
    return check_done("ui_models_rows");
}
