/*
 * test_ui_meter.c — the gauges (ui/meter.c): number formatting, bars
 * that fill in proportion and keep exactly their width, the compact line,
 * large digits, and process memory read from /proc checked against the
 * kernel's own accounting (getrusage's peak RSS) and against memory we
 * touch ourselves.
 */
#include <locale.h>
#include <sys/resource.h>

#include "check.h"
#include "../ui/text.c"
#include "../ui/meter.c"

static void test_formats(void) {
    char b[32];
    struct { uint64_t v; const char *s; } bytes[] = {
        {0, "0B"}, {1023, "1023B"}, {1024, "1.00K"}, {1536, "1.50K"}, {10 * 1024, "10.0K"},
        {150 * 1024 * 1024ull, "150M"}, {(uint64_t)(1.21 * 1024 * 1024 * 1024), "1.21G"},
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        pt_fmt_bytes(bytes[i].v, b, sizeof b);
        CHECK(strcmp(b, bytes[i].s) == 0, "bytes %llu -> %s, want %s", (unsigned long long)bytes[i].v, b, bytes[i].s);
    }
    pt_fmt_rate(612.4, b, sizeof b); CHECK(strcmp(b, "612") == 0, "rate %s", b);
    pt_fmt_rate(41.26, b, sizeof b); CHECK(strcmp(b, "41.3") == 0, "rate %s", b);
    pt_fmt_rate(4.123, b, sizeof b); CHECK(strcmp(b, "4.12") == 0, "rate %s", b);
    pt_fmt_rate(-1, b, sizeof b); CHECK(strcmp(b, "-") == 0, "rate %s", b);
    pt_fmt_secs(0.3404, b, sizeof b); CHECK(strcmp(b, "340ms") == 0, "secs %s", b);
    pt_fmt_secs(2.414, b, sizeof b); CHECK(strcmp(b, "2.41s") == 0, "secs %s", b);
}

static int count_style(const pt_styled *s, int style) {
    int n = 0;
    for (size_t i = 0; i < s->len; i++) n += s->style[i] == style;
    return n;
}

static void test_bars(void) {
    pt_ui_stats st;
    memset(&st, 0, sizeof st);
    st.have_mem = true;
    st.mem.kv_tokens = 1024;
    st.mem.kv_capacity = 4096;
    pt_meter_value v;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_CTX].update(&st, &v);
    CHECK(strcmp(v.text, "1024/4096 tok") == 0, "ctx text %s", v.text);
    pt_styled line;
    for (int width = 12; width <= 120; width += 9) {
        pt_meter_render(&pt_meters[PT_METER_CTX], &v, &st, PT_MM_BAR, 8, width, 0, &line);
        CHECK(line.cells == width && pt_str_cells(line.text, line.len) == width,
              "bar keeps width %d (got %d)", width, line.cells);
    }
    /* 40 cells: caption 8, brackets 2, inner 30; a quarter full is 8 cells
     * (7.5 rounded), the text covers none of them */
    pt_meter_render(&pt_meters[PT_METER_CTX], &v, &st, PT_MM_BAR, 8, 40, 0, &line);
    CHECK(count_style(&line, PT_CS_BAR1) == 8, "quarter bar: %d cells", count_style(&line, PT_CS_BAR1));
    CHECK(strncmp(line.text, "Context [||||||||", 17) == 0, "bar text: %s", line.text);
    CHECK(strstr(line.text, "1024/4096 tok]") != NULL, "text right-aligned in the bar: %s", line.text);
    /* no budget and nothing spilled: one full segment, the KV in RAM */
    st.kv.ram_bytes = 3 << 20;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_KV].update(&st, &v);
    pt_meter_render(&pt_meters[PT_METER_KV], &v, &st, PT_MM_BAR, 8, 120, 0, &line);
    /* inner 110: ram fills it, the 9-cell text covers the last 9 */
    int b1 = count_style(&line, PT_CS_BAR1), b2 = count_style(&line, PT_CS_BAR2);
    CHECK(b1 == 101, "ram segment %d", b1);
    CHECK(b2 == 0, "no second segment: %d", b2);
    CHECK(strstr(line.text, "3.00M ram]") != NULL && !strstr(line.text, "disk"), "kv text: %s", line.text);
    /* a budget of 4 MiB, 3 MiB in RAM and 1 MiB only on disk: the cache
     * fills the budget, RAM three quarters of the bar, disk the rest */
    st.kv.disk_bytes = 1 << 20;
    st.kv.budget_bytes = 4 << 20;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_KV].update(&st, &v);
    /* wide enough that the text (28 cells, over the bar's end) leaves
     * some of the disk segment's 47 cells showing */
    pt_meter_render(&pt_meters[PT_METER_KV], &v, &st, PT_MM_BAR, 8, 200, 0, &line);
    CHECK(v.n_seg == 2 && v.v[0] == 3 << 20 && v.v[1] == 1 << 20 && v.total == 4 << 20,
          "kv segments %d: %g + %g of %g", v.n_seg, v.v[0], v.v[1], v.total);
    CHECK(strstr(line.text, "3.00M ram 1.00M disk /4.00M]") != NULL, "kv text with a budget: %s", line.text);
    CHECK(count_style(&line, PT_CS_BAR2) > 0, "the disk segment is drawn: %s", line.text);
    /* past the budget the whole cache is full scale */
    st.kv.disk_bytes = 5 << 20;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_KV].update(&st, &v);
    CHECK(v.total == 8 << 20, "kv full scale past the budget: %g", v.total);
    memset(&st.kv, 0, sizeof st.kv);
    /* a tiny value still shows one cell; too narrow drops to the brief text */
    st.mem.kv_tokens = 1;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_CTX].update(&st, &v);
    pt_meter_render(&pt_meters[PT_METER_CTX], &v, &st, PT_MM_BAR, 8, 60, 0, &line);
    CHECK(count_style(&line, PT_CS_BAR1) == 1, "non-zero shows a cell");
    pt_meter_render(&pt_meters[PT_METER_CTX], &v, &st, PT_MM_BAR, 8, 18, 0, &line);
    CHECK(strcmp(line.text, "Context [| 1/4096]") == 0 && line.cells == 18, "brief text in a narrow bar: %s", line.text);
}

static void test_rates_and_compact(void) {
    pt_ui_stats st;
    memset(&st, 0, sizeof st);
    st.live_prefill_tps = st.live_decode_tps = st.live_ttft = -1;
    pt_meter_value v;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_DECODE].update(&st, &v);
    CHECK(v.dim, "no rate before any reply");
    st.have_last = true;
    st.last_decode_tps = 41.26;
    st.last_prefill_tps = 612;
    st.last_ttft = 0.25;
    st.last_n_gen = 64;
    pt_stats_scale(&st);
    CHECK(st.decode_scale == 50 && st.prefill_scale == 1000, "scales %g %g", st.decode_scale, st.prefill_scale);
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_DECODE].update(&st, &v);
    CHECK(strcmp(v.text, "41.3 t/s last") == 0, "decode text %s", v.text);
    st.generating = true;
    st.live_decode_tps = 39.0;
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_DECODE].update(&st, &v);
    CHECK(strcmp(v.text, "39.0 t/s live") == 0, "live decode text %s", v.text);
    st.rss = 150ull << 20;
    st.rss_peak = 160ull << 20;
    pt_styled line;
    for (int w = 10; w <= 200; w += 7) {
        pt_meter_compact(&st, w, &line);
        CHECK(line.cells == w, "compact width %d got %d", w, line.cells);
    }
    pt_meter_compact(&st, 40, &line);
    CHECK(strncmp(line.text, "dc 39.0 pf ", 11) == 0, "compact starts with the rates: %s", line.text);
    /* the sparkline uses the history, scaled to its peak */
    for (int i = 0; i < 8; i++) pt_spark_push(&st, (float)i);
    memset(&v, 0, sizeof v);
    pt_meters[PT_METER_SPARK].update(&st, &v);
    pt_meter_render(&pt_meters[PT_METER_SPARK], &v, &st, PT_MM_GRAPH, 8, 40, 0, &line);
    CHECK(strstr(line.text, "\u2581\u2582\u2583\u2585\u2586\u2587\u2588") != NULL, "sparkline: %s", line.text);
    CHECK(line.cells == 40, "graph width %d", line.cells);
    for (int i = 0; i < PT_SPARK_MAX + 10; i++) pt_spark_push(&st, 1);
    CHECK(st.n_spark == PT_SPARK_MAX, "history is bounded");
}

static void test_big_digits(void) {
    char rows[6][512];
    int w[6];
    for (int r = 0; r < 3; r++) w[r] = pt_big_text("41.2 t/s", r, 1, true, rows[r], sizeof rows[r]);
    CHECK(w[0] == w[1] && w[1] == w[2], "rows of equal width %d %d %d", w[0], w[1], w[2]);
    CHECK(strstr(rows[2], "t/s") != NULL && strstr(rows[1], "t/s") == NULL, "units small on the bottom row");
    char a[64];
    pt_big_text("8", 0, 1, false, a, sizeof a);
    CHECK(strcmp(a, "#\"#") == 0, "ascii fallback: %s", a);
    /* "1" at scale 1: TF_ / _F_ / TTT; at scale 2 every pixel doubles:
     * 6 rows of 6 cells, the stem two columns wide */
    const char *one1[3] = {"\u2580\u2588 ", " \u2588 ", "\u2580\u2580\u2580"};
    for (int r = 0; r < 3; r++) {
        pt_big_text("1", r, 1, true, rows[r], sizeof rows[r]);
        CHECK(strcmp(rows[r], one1[r]) == 0, "1 row %d: [%s]", r, rows[r]);
    }
    const char *one2[6] = {
        "\u2588\u2588\u2588\u2588  ", "  \u2588\u2588  ", "  \u2588\u2588  ",
        "  \u2588\u2588  ", "\u2588\u2588\u2588\u2588\u2588\u2588", "      ",
    };
    for (int r = 0; r < 6; r++) {
        w[r] = pt_big_text("1", r, 2, true, rows[r], sizeof rows[r]);
        CHECK(strcmp(rows[r], one2[r]) == 0 && w[r] == 6, "1 at scale 2, row %d: [%s]", r, rows[r]);
    }
    for (int r = 0; r < 6; r++) w[r] = pt_big_text("612.5 t/s", r, 2, true, rows[r], sizeof rows[r]);
    CHECK(w[0] == w[5] && w[2] == w[5], "scale 2 rows of equal width");
    CHECK(strstr(rows[5], "t/s") != NULL && strstr(rows[2], "t/s") == NULL, "units on the last row at scale 2");
}

static void test_proc_mem(void) {
    uint64_t rss0, peak0;
    CHECK(pt_proc_mem(&rss0, &peak0), "read /proc/self/status");
    CHECK(rss0 > 0 && rss0 <= peak0, "rss %llu <= peak %llu", (unsigned long long)rss0, (unsigned long long)peak0);
    /* touch 64 MiB: RSS grows by about that much */
    size_t n = 64u << 20;
    char *p = malloc(n);
    for (size_t i = 0; i < n; i += 4096) p[i] = (char)i;
    uint64_t rss1, peak1;
    pt_proc_mem(&rss1, &peak1);
    CHECK(rss1 >= rss0 + (60u << 20) && rss1 <= rss0 + (72u << 20), "rss grew %llu -> %llu",
          (unsigned long long)rss0, (unsigned long long)rss1);
    CHECK(peak1 >= rss1, "peak follows");
    /* the kernel's own peak for the process (getrusage) is the same
     * high-water mark once this process has set a new one; before that it
     * may still hold the larger peak of the process image before exec */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t ru_peak = (uint64_t)ru.ru_maxrss * 1024;
    CHECK(peak1 + peak1 / 50 >= ru_peak && peak1 <= ru_peak + ru_peak / 50,
          "VmHWM %llu vs ru_maxrss %llu", (unsigned long long)peak1, (unsigned long long)ru_peak);
    free(p);
    CHECK(pt_ram_total() > (64u << 20), "total RAM");
}

int main(void) {
    setlocale(LC_ALL, "C.UTF-8");
    pt_text_init();
    test_formats();
    test_bars();
    test_rates_and_compact();
    test_big_digits();
    test_proc_mem();
    return check_done("ui_meter");
}
