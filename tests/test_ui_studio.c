/*
 * test_ui_studio.c — the pure parts of the image studio: picture slot
 * bookkeeping (which slots a frame must send and which it must wipe,
 * ui/picture.c), the transcript's picture blocks (line counts, sizes,
 * relayout when the allowed rows change), and the studio form's checks
 * and key steps (ui/imgset.c).
 */
#include <locale.h>

#include "check.h"
#include "../ui/text.c"
#include "../ui/wrap.c"
#include "../ui/transcript.c"
#include "../ui/picture.c"
#include "../ui/imgset.c"

static const uint8_t px[3 * 64 * 64];

static pt_pic_slot slot(uint32_t id, int y, int x, int h, int w, uint64_t gen) {
    return (pt_pic_slot){.id = id, .rect = {y, x, h, w}, .rgb = px, .w = 64, .h = 64, .stride = 192, .gen = gen};
}

/* Run one frame with the given slots; returns the plan. */
static pt_pic_plan frame(pt_pic_layer *L, const pt_pic_slot *s, int n) {
    pt_pic_begin(L);
    for (int i = 0; i < n; i++) pt_pic_place(L, &s[i]);
    pt_pic_plan p;
    pt_pic_plan_frame(L, &p);
    pt_pic_commit(L);
    return p;
}

static void test_slots(void) {
    pt_pic_layer L;
    memset(&L, 0, sizeof L);
    pt_pic_slot a = slot(1, 2, 2, 10, 20, 7), b = slot(2, 14, 2, 5, 10, 9);
    pt_pic_plan p = frame(&L, (pt_pic_slot[]){a, b}, 2);
    CHECK(p.n_send == 2 && p.n_wipe == 0, "new slots are sent (%d sent, %d wiped)", p.n_send, p.n_wipe);
    p = frame(&L, (pt_pic_slot[]){a, b}, 2);
    CHECK(p.n_send == 0 && p.n_wipe == 0, "an unchanged frame sends nothing");
    CHECK(L.shown[0].rgb == NULL, "shown slots keep no pixels");
    pt_pic_slot a2 = a;
    a2.gen = 8;
    p = frame(&L, (pt_pic_slot[]){a2, b}, 2);
    CHECK(p.n_send == 1 && p.send[0] == 0 && p.n_wipe == 0, "a new generation in place is re-sent, not wiped");
    pt_pic_slot a3 = a2;
    a3.rect.y = 1;   /* scrolled by a row */
    p = frame(&L, (pt_pic_slot[]){a3, b}, 2);
    CHECK(p.n_send == 1 && p.n_wipe == 1 && p.wipe[0].id == 1 && p.wipe[0].rect.y == 2,
          "a moved slot is wiped at its old rect and sent at the new one");
    p = frame(&L, (pt_pic_slot[]){b}, 1);
    CHECK(p.n_send == 0 && p.n_wipe == 1 && p.wipe[0].id == 1, "a slot gone is wiped");
    p = frame(&L, NULL, 0);   /* an overlay: no slots placed */
    CHECK(p.n_wipe == 1 && p.wipe[0].id == 2 && L.n_shown == 0, "an overlay wipes every slot");
    p = frame(&L, (pt_pic_slot[]){b}, 1);
    CHECK(p.n_send == 1, "the slot comes back when the overlay goes");
    pt_pic_invalidate(&L);
    p = frame(&L, (pt_pic_slot[]){b}, 1);
    CHECK(p.n_send == 1 && p.n_wipe == 1, "after a resize everything is wiped and re-sent");
    p = frame(&L, (pt_pic_slot[]){b}, 1);
    CHECK(p.n_send == 0 && p.n_wipe == 0 && !L.all_stale, "and then it is settled");
    pt_pic_slot empty = slot(3, 0, 0, 0, 10, 1);
    pt_pic_begin(&L);
    CHECK(!pt_pic_place(&L, &empty), "an empty rect is refused");
    pt_pic_slot many[PT_PIC_MAX_SLOTS + 2];
    for (int i = 0; i < PT_PIC_MAX_SLOTS + 2; i++) many[i] = slot((uint32_t)i + 10, i, 0, 1, 4, 1);
    p = frame(&L, many, PT_PIC_MAX_SLOTS + 2);
    CHECK(L.n_shown == PT_PIC_MAX_SLOTS && p.n_send == PT_PIC_MAX_SLOTS, "slots beyond the maximum are dropped");
}

static void test_picture_lines(void) {
    CHECK(pt_picture_rows(80, 64, 64, 10) == 10, "a square at 80 columns: capped at 10 rows (got %d)",
          pt_picture_rows(80, 64, 64, 10));
    CHECK(pt_picture_rows(23, 64, 64, 10) == 10, "20 columns of a square: 10 rows (got %d)",
          pt_picture_rows(23, 64, 64, 10));
    CHECK(pt_picture_rows(13, 64, 64, 10) == 5, "10 columns: 5 rows (got %d)", pt_picture_rows(13, 64, 64, 10));
    CHECK(pt_picture_rows(80, 256, 64, 10) == 10 && pt_picture_rows(40, 256, 64, 10) == 5,
          "a wide picture takes fewer rows (%d)", pt_picture_rows(40, 256, 64, 10));
    CHECK(pt_picture_rows(80, 64, 64, 1) == 1, "placeholder: one row");
    CHECK(pt_picture_rows(80, 0, 0, 8) == 1, "no size: one row");
    CHECK(pt_picture_cols(80, 64, 64, 10) == 20, "10 rows of a square are 20 columns (got %d)",
          pt_picture_cols(80, 64, 64, 10));
    CHECK(pt_picture_cols(10, 64, 64, 10) == 7, "never wider than the room (got %d)", pt_picture_cols(10, 64, 64, 10));

    pt_msg msgs[3];
    memset(msgs, 0, sizeof msgs);
    msgs[0].role = PT_ROLE_USER; msgs[0].text = (char *)"draw"; msgs[0].len = 4; msgs[0].rev = 1;
    const char *cap = "a red square\nseed 42, 4 steps";
    msgs[1].role = PT_ROLE_PICTURE; msgs[1].text = (char *)cap; msgs[1].len = strlen(cap); msgs[1].rev = 2;
    msgs[1].pic_id = 1; msgs[1].pic_w = 64; msgs[1].pic_h = 64;
    msgs[2].role = PT_ROLE_ASSISTANT; msgs[2].text = (char *)"nice"; msgs[2].len = 4; msgs[2].rev = 3;
    pt_convo c = {.msgs = msgs, .n = 3};
    pt_tline lines[32];
    int n = pt_layout_message(&msgs[1], 1, 80, 8, lines, 32);
    /* label, 2 caption lines, 8 picture rows, blank */
    CHECK(n == 12, "a picture message: label + caption + 8 rows + blank = 12 (got %d)", n);
    CHECK(lines[3].kind == PT_TL_PICTURE && lines[3].start == 0 && lines[3].end == 8 &&
          lines[10].kind == PT_TL_PICTURE && lines[10].start == 7, "picture rows number themselves");
    pt_transcript t;
    pt_transcript_init(&t);
    t.pic_max_rows = 8;
    pt_transcript_layout(&t, &c, 80);
    CHECK(t.total == 3 + 12 + 3, "transcript with a picture block: 18 lines (got %d)", t.total);
    const pt_tline *l = pt_transcript_line(&t, 3 + 3);
    CHECK(l && l->kind == PT_TL_PICTURE && l->msg == 1 && l->start == 0, "line 6 is the block's first row");
    l = pt_transcript_line(&t, 3 + 12);
    CHECK(l && l->msg == 2 && l->kind == PT_TL_LABEL, "the reply follows the block");
    t.pic_max_rows = 1;   /* pictures turned off: a one-line placeholder */
    pt_transcript_layout(&t, &c, 80);
    CHECK(t.total == 3 + 5 + 3, "placeholder: 11 lines (got %d)", t.total);
    t.pic_max_rows = 10;
    pt_transcript_layout(&t, &c, 13);   /* 10 columns: 5 rows */
    int rows = 0;
    for (int i = 0; i < t.total; i++) rows += pt_transcript_line(&t, i)->kind == PT_TL_PICTURE;
    CHECK(rows == 5, "narrow: the block shrinks to its width (%d rows)", rows);
    pt_transcript_free(&t);
}

static void test_form(void) {
    pt_img_settings s;
    char why[200];
    pt_img_settings_default(&s);
    CHECK(!pt_img_settings_check(&s, why, sizeof why) && strstr(why, "prompt"), "empty prompt refused: %s", why);
    snprintf(s.prompt, sizeof s.prompt, "  \n ");
    CHECK(!pt_img_settings_check(&s, why, sizeof why), "blank prompt refused");
    snprintf(s.prompt, sizeof s.prompt, "a red square");
    CHECK(pt_img_settings_check(&s, why, sizeof why), "defaults (the model's) pass: %s", why);
    s.width = 100; s.height = 64;
    CHECK(!pt_img_settings_check(&s, why, sizeof why) && strstr(why, "64"), "100 wide refused: %s", why);
    s.width = 64; s.height = 0;
    CHECK(!pt_img_settings_check(&s, why, sizeof why), "one side auto, the other set: refused");
    s.width = s.height = 2048;
    CHECK(!pt_img_settings_check(&s, why, sizeof why), "beyond the studio's maximum refused");
    s.width = s.height = 0;
    s.steps = PT_IMG_MAX_STEPS + 1;
    CHECK(!pt_img_settings_check(&s, why, sizeof why) && strstr(why, "steps"), "too many steps refused");
    s.steps = 0;
    s.cfg = 31;
    CHECK(!pt_img_settings_check(&s, why, sizeof why), "cfg 31 refused");
    s.cfg = -1;

    /* key steps */
    pt_img_step_size(&s, 1);
    CHECK(s.width == 64 && s.height == 64, "auto size + 1 = 64x64");
    pt_img_step_size(&s, 1);
    CHECK(s.width == 128 && s.height == 128, "then 128x128");
    pt_img_step_size(&s, -2);
    CHECK(s.width == 0 && s.height == 0, "down below 64 is auto again");
    pt_img_step_size(&s, 100);
    CHECK(s.width == PT_IMG_MAX_SIDE, "clamped at the maximum");
    CHECK(pt_img_settings_check(&s, why, sizeof why), "every size a step reaches is valid: %s", why);
    pt_img_step_steps(&s, 4);
    CHECK(s.steps == 4, "steps from auto + 4 = 4");
    pt_img_step_steps(&s, -10);
    CHECK(s.steps == 0, "steps down to auto");
    pt_img_step_cfg(&s, 1);
    CHECK(s.cfg == 0, "cfg from auto + 1 = 0");
    pt_img_step_cfg(&s, 3);
    CHECK(s.cfg == 1.5f, "cfg by halves");
    pt_img_step_cfg(&s, -10);
    CHECK(s.cfg < 0, "cfg down to auto");
    s.seed = 1;
    pt_img_step_seed(&s, -5);
    CHECK(s.seed == 0, "seed does not wrap below 0");
    pt_img_step_sampler(&s, 1);
    CHECK(s.sampler == PT_IMAGE_EULER, "sampler after auto: euler");
    pt_img_step_sampler(&s, -1);
    CHECK(s.sampler == PT_IMAGE_SAMPLER_COUNT, "and back to auto");
    pt_img_step_sampler(&s, -1);
    CHECK(s.sampler == PT_IMAGE_LCM, "auto - 1 wraps to the last");

    char text[600];
    pt_img_settings q;
    pt_img_settings_default(&q);
    snprintf(q.prompt, sizeof q.prompt, "a cat");
    snprintf(q.negative, sizeof q.negative, "blurry");
    q.steps = 4; q.cfg = 6; q.seed = 7; q.width = q.height = 64; q.sampler = PT_IMAGE_EULER;
    pt_img_parameters(&q, "demo-sd-q8_0", text, sizeof text);
    CHECK(strcmp(text, "a cat\nNegative prompt: blurry\nSteps: 4, Sampler: Euler, CFG scale: 6, Seed: 7, "
                       "Size: 64x64, Model: demo-sd-q8_0") == 0, "A1111 parameters: %s", text);
}

int main(void) {
    setlocale(LC_ALL, "C.UTF-8");
    pt_text_init();
    test_slots();
    test_picture_lines();
    test_form();
    return check_done("ui_studio");
}
