/*
 * test_sd_fixture.c — tests/sd_fixture.h reads a safetensors file written
 * here byte by byte (an odd header length, so the data section is not
 * 4-byte aligned in the file), F32 and I32 arrays, shapes, a missing
 * name, the NCHW <-> HWC helpers, and ref.json beside it.
 */
#include "sd_fixture.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char dir[] = "/tmp/sdfx_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];

    /* a: F32 [2,3,1,2] = 0..11; ids: I32 [3] = {7,-1,694}; header padded
     * with spaces to an odd length. */
    float a[12];
    for (int i = 0; i < 12; i++) a[i] = (float)i * 0.5f - 1.0f;
    int32_t ids[3] = {7, -1, 694};
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr,
                      "{\"__metadata__\":{\"format\":\"pt\"},"
                      "\"ids\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[48,60]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3,1,2],\"data_offsets\":[0,48]}} ");
    if (hl % 2 == 0) hdr[hl++] = ' ';
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    FILE *fp = fopen(path, "wb");
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    fwrite(le, 1, 8, fp);
    fwrite(hdr, 1, (size_t)hl, fp);
    fwrite(a, 4, 12, fp);
    fwrite(ids, 4, 3, fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/ref.json", dir);
    fp = fopen(path, "wb");
    fputs("{\"prompts\": [\"a cat\", \"B\"]}", fp);
    fclose(fp);

    sdfx *f = sdfx_open(dir);
    int64_t sh[4];
    int nd = -1;
    const float *ga = sdfx_get(f, "a", sh, &nd);
    CHECK(ga != NULL, "a missing");
    CHECK(nd == 4 && sh[0] == 2 && sh[1] == 3 && sh[2] == 1 && sh[3] == 2, "a shape %d", nd);
    if (ga) CHECK(memcmp(ga, a, sizeof a) == 0, "a values");
    const int32_t *gi = sdfx_get_i32(f, "ids", sh, &nd);
    CHECK(gi && nd == 1 && sh[0] == 3 && sh[1] == 1, "ids shape");
    if (gi) CHECK(gi[0] == 7 && gi[1] == -1 && gi[2] == 694, "ids values");
    CHECK(sdfx_get(f, "ids", NULL, NULL) == NULL, "I32 array read as F32");
    CHECK(sdfx_get(f, "nope", NULL, NULL) == NULL, "missing name");
    CHECK(sdfx_has(f, "a") && !sdfx_has(f, "__metadata__"), "has");
    const cJSON *j = sdfx_json(f);
    CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "prompts")) == 2, "ref.json");

    /* NCHW [2,3,1,2] -> HWC: image b, pixel p, channel c at (b*2+p)*3+c. */
    float hwc[12], back[12];
    sdfx_nchw_to_hwc(a, 2, 3, 1, 2, hwc);
    CHECK(hwc[(1 * 2 + 1) * 3 + 2] == a[(1 * 3 + 2) * 2 + 1], "nchw_to_hwc");
    CHECK(hwc[1] == a[2], "nchw_to_hwc channel 1 of pixel 0");
    sdfx_hwc_to_nchw(hwc, 2, 3, 1, 2, back);
    CHECK(memcmp(back, a, sizeof a) == 0, "round trip");
    sdfx_close(f);

    remove(path);
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    remove(path);
    rmdir(dir);
    return check_done("sd_fixture");
}
