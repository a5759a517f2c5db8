/*
 * fuzz_toml.c — the TOML subset reader (engine/toml.h) on arbitrary bytes,
 * then the same bytes as a catalog (pt_catalog_add_text) over the
 * committed models.toml's shape: every accepted document is walked, every
 * error must be one line naming a line and column.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "petrel.h"
#include "toml.h"

static void must(int cond) {
    if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pt_toml_doc d;
    pt_error err = {0};
    if (pt_toml_parse((const char *)data, size, "fuzz.toml", &d, &err) == PT_OK) {
        for (int i = 0; i < d.n_items; i++) {
            const pt_toml_item *it = &d.items[i];
            must(it->table >= 0 && it->table < d.n_tables && it->key != NULL && it->line >= 1);
            if (it->type == PT_TOML_STRING) must(strlen(it->str) <= size);
            for (int k = 0; k < it->n_items; k++) must(strlen(it->items[k]) <= size);
        }
        pt_toml_free(&d);
    } else {
        /* "fuzz.toml:LINE:COL: ..." on one line (or out of memory) */
        must(err.code == PT_ERR_FORMAT || err.code == PT_ERR_NOMEM);
        must(strchr(err.msg, '\n') == NULL);
        if (err.code == PT_ERR_FORMAT) must(strncmp(err.msg, "fuzz.toml:", 10) == 0);
    }

    pt_catalog *c = NULL;
    if (pt_catalog_new(&c, &err) != PT_OK) return 0;
    static const char base[] = "default = \"a\"\n[models.a]\nsource = \"hf\"\nrepo = \"o/r\"\nfile = \"a.gguf\"\n";
    must(pt_catalog_add_text(c, base, sizeof base - 1, "base", &err) == PT_OK);
    pt_status st = pt_catalog_add_text(c, (const char *)data, size, "user.toml", &err);
    if (st != PT_OK) {
        /* all or nothing: the base is untouched */
        must(pt_catalog_count(c) == 1 && !strcmp(pt_catalog_get(c, 0)->local_name, "a.gguf"));
        must(strchr(err.msg, '\n') == NULL);
    }
    for (int i = 0; i < pt_catalog_count(c); i++) {
        const pt_catalog_entry *e = pt_catalog_get(c, i);
        must(e->id && e->source && e->local_name && *e->local_name && !strchr(e->local_name, '/'));
        must(pt_catalog_find(c, e->id) == e);
    }
    const char *def = pt_catalog_default(c, PT_MODEL_KIND_LLM);
    must(def && pt_catalog_find(c, def));
    pt_catalog_free(c);
    return 0;
}
