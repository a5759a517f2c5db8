/*
 * test_ui_worker_image.c — image jobs on the app's engine thread
 * (ui/worker.c) with the bundled demo image model, beside a loaded LLM:
 * progress after every step with a preview, the final picture with the
 * settings it used (the model's defaults filled in), and the cancel
 * discipline of turns: a job cancelled before it starts never runs, a
 * running one stops within a step, "up to N" reaches queued jobs, and a
 * later job is never touched by an earlier cancel.
 *
 * No timing: as in test_ui_worker.c, holding the event queue's lock
 * stops the worker at its next post, so cancels land where the test says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "worker.h"

static pt_queue events;
static pt_worker w;
static char model[4096];

typedef struct job_seen {
    int n_progress, last_step, total, preview_w, preview_h;
    bool loaded;
    pt_status status;
    int w, h;
    bool has_rgb;
    pt_img_settings set;
} job_seen;

/* Events of job id until its DONE; after_step: steps already seen. */
static job_seen wait_job_from(int id, int after_step) {
    job_seen s = {0};
    s.last_step = after_step;
    for (;;) {
        pt_ui_event *ev = (pt_ui_event *)pt_queue_wait(&events);
        if (!ev) { CHECK(0, "queue closed waiting for job %d", id); return s; }
        if (ev->kind == PT_EV_LOADED) CHECK(ev->status == PT_OK, "LLM load: %s", ev->msg);
        if (ev->kind == PT_EV_IMG_LOADED) {
            CHECK(ev->status == PT_OK, "image model load: %s", ev->msg);
            s.loaded = true;
        }
        if (ev->kind == PT_EV_IMG_PROGRESS && ev->img_id == id) {
            CHECK(ev->img_step == s.last_step + 1, "job %d: step %d after %d", id, ev->img_step, s.last_step);
            s.n_progress++;
            s.last_step = ev->img_step;
            s.total = ev->img_total;
            s.preview_w = ev->w;
            s.preview_h = ev->h;
            CHECK(ev->rgb != NULL, "job %d: a preview with step %d", id, ev->img_step);
        }
        bool done = ev->kind == PT_EV_IMG_DONE && ev->img_id == id;
        if (ev->kind == PT_EV_IMG_DONE && ev->img_id != id) CHECK(0, "job %d ended while waiting for %d", ev->img_id, id);
        if (done) {
            s.status = ev->status;
            s.w = ev->w;
            s.h = ev->h;
            s.has_rgb = ev->rgb != NULL;
            s.set = ev->img_set;
        }
        pt_ui_event_free(ev);
        if (done) return s;
    }
}

static job_seen wait_job(int id) { return wait_job_from(id, 0); }

static void send_job(int id, int side, int steps) {
    pt_img_settings s;
    pt_img_settings_default(&s);
    snprintf(s.prompt, sizeof s.prompt, "a red square");
    s.width = s.height = side;
    s.steps = steps;
    CHECK(pt_worker_image(&w, id, model, &s), "job %d sent", id);
}

static void expect_cancelled_early(int id) {
    job_seen s = wait_job(id);
    CHECK(s.status == PT_ERR_CANCELLED, "job %d: %s, want cancelled", id, pt_status_name(s.status));
    CHECK(s.n_progress == 0 && !s.has_rgb, "job %d: cancelled before its first step, yet %d steps", id, s.n_progress);
}

int main(void) {
    const char *src = getenv("PETREL_SOURCE_DIR");
    snprintf(model, sizeof model, "%s/assets/demo-sd/demo-sd-q8_0.gguf", src ? src : ".");
    CHECK(pt_queue_init(&events, false), "event queue");
    CHECK(pt_worker_start(&w, &events, 256, 2), "worker started");
    CHECK(pt_worker_load(&w, 1, test_data("tiny_llama.gguf")), "LLM load sent");

    /* 1: cancelled while the worker is busy (it blocks posting the LLM's
     * LOADED, or the image model's IMG_LOADED): never runs a step */
    pthread_mutex_lock(&events.mu);
    send_job(1, 64, 3);
    pt_worker_cancel_image(&w, 1);
    pthread_mutex_unlock(&events.mu);
    expect_cancelled_early(1);

    /* 2: runs in full; the model's defaults fill what the form left open */
    send_job(2, 64, 3);
    job_seen s = wait_job(2);
    CHECK(s.status == PT_OK, "job 2: %s", pt_status_name(s.status));
    CHECK(s.n_progress == 3 && s.last_step == 3 && s.total == 3, "job 2: %d progress reports", s.n_progress);
    CHECK(s.preview_w == 8 && s.preview_h == 8, "preview at latent size 8x8 (%dx%d)", s.preview_w, s.preview_h);
    CHECK(s.has_rgb && s.w == 64 && s.h == 64, "job 2: a 64x64 picture (%dx%d)", s.w, s.h);
    CHECK(s.set.steps == 3 && s.set.cfg >= 0 && s.set.sampler < PT_IMAGE_SAMPLER_COUNT && s.set.seed == 42,
          "job 2: settings used reported (cfg %g, sampler %d)", (double)s.set.cfg, (int)s.set.sampler);

    /* 3 and 4 queued behind a blocked worker; "up to 4" cancels both */
    pthread_mutex_lock(&events.mu);
    pt_worker_probe(&w, test_data("tiny_llama.gguf"));   /* posts: blocks the worker */
    send_job(3, 64, 3);
    send_job(4, 64, 3);
    pt_worker_cancel_image(&w, 4);
    pt_worker_cancel_image(&w, 2);   /* an older id undoes nothing */
    pthread_mutex_unlock(&events.mu);
    expect_cancelled_early(3);
    expect_cancelled_early(4);

    /* 5: a long job stopped mid-way: the cancel lands while the worker
     * waits to post a step, so it stops at the next step */
    send_job(5, 512, 50);
    for (;;) {
        pt_ui_event *ev = (pt_ui_event *)pt_queue_wait(&events);
        bool first = ev && ev->kind == PT_EV_IMG_PROGRESS && ev->img_id == 5;
        if (first) pthread_mutex_lock(&events.mu);
        pt_ui_event_free(ev);
        if (first || !ev) break;
    }
    pt_worker_cancel_image(&w, 5);
    pthread_mutex_unlock(&events.mu);
    s = wait_job_from(5, 1);
    CHECK(s.status == PT_ERR_CANCELLED && !s.has_rgb, "job 5 stopped: %s", pt_status_name(s.status));
    CHECK(s.last_step < 50, "job 5 stopped before its end (last step seen %d of 50)", s.last_step);

    /* 6: after all that, a job runs in full, and the LLM is still there */
    send_job(6, 64, 2);
    s = wait_job(6);
    CHECK(s.status == PT_OK && s.n_progress == 2 && s.has_rgb, "job 6 ran: %s", pt_status_name(s.status));
    pt_chat_settings set;
    pt_chat_settings_default(&set);
    set.n_predict = 4;
    pt_chat_message msg = {"user", "hello"};
    CHECK(pt_worker_turn(&w, 1, &msg, 1, &set), "a chat turn after the pictures");
    for (;;) {
        pt_ui_event *ev = (pt_ui_event *)pt_queue_wait(&events);
        if (!ev) break;
        bool done = ev->kind == PT_EV_TURN_DONE;
        if (done) CHECK(ev->status == PT_OK && ev->res.gen.n_generated >= 1, "the LLM answers beside the image model");
        pt_ui_event_free(ev);
        if (done) break;
    }

    CHECK(pt_worker_stop(&w, 30.0), "worker stopped");
    pt_qnode *n;
    while ((n = pt_queue_pop(&events))) pt_ui_event_free((pt_ui_event *)n);
    pt_queue_destroy(&events, NULL);
    return check_done("ui_worker_image");
}
