/*
 * test_ui_worker.c — the full-screen app's engine thread (ui/worker.c)
 * driven through its API with a tiny committed model: every turn has its
 * own cancel id, and a cancel for a turn the worker has not started yet
 * (it is still loading, or busy with an earlier command) cancels that turn
 * when it starts, while later turns run untouched. The model card says
 * where the model runs (the CPU here), its device strings escaped.
 *
 * No timing: to keep the worker from reaching a turn before the test has
 * cancelled it, the test holds the event queue's lock; the worker then
 * blocks in its next post (the end of the load, or a memory report) until
 * the test lets go. Events are read with the queue's blocking wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "worker.h"

static pt_queue events;
static pt_worker w;

/* Events of one turn, collected until its TURN_DONE. */
typedef struct turn_seen {
    int n_text;
    pt_status status;
    pt_stop_reason stop;
    int n_generated;
} turn_seen;

/* Wait for the TURN_DONE of turn_id, counting its TEXT events; events of
 * other kinds are checked for a failed load and dropped. */
static turn_seen wait_turn(int turn_id) {
    turn_seen s = {0};
    for (;;) {
        pt_ui_event *ev = (pt_ui_event *)pt_queue_wait(&events);
        if (!ev) { CHECK(0, "event queue closed before turn %d ended", turn_id); return s; }
        if (ev->kind == PT_EV_LOADED) {
            CHECK(ev->status == PT_OK && ev->load_id == 1, "load 1: %s", ev->msg);
            /* no --device: the CPU, nothing to explain */
            CHECK(strcmp(ev->card.device, "CPU") == 0 && ev->card.n_device_layers == 0 &&
                  ev->card.device_note[0] == 0, "load 1 runs on '%s' (%d layers), note '%s'",
                  ev->card.device, ev->card.n_device_layers, ev->card.device_note);
        }
        if (ev->kind == PT_EV_TEXT && ev->turn_id == turn_id) s.n_text++;
        bool done = ev->kind == PT_EV_TURN_DONE && ev->turn_id == turn_id;
        if (ev->kind == PT_EV_TURN_DONE && ev->turn_id != turn_id)
            CHECK(0, "turn %d ended while waiting for turn %d", ev->turn_id, turn_id);
        if (done) {
            s.status = ev->status;
            s.stop = ev->res.gen.stop;
            s.n_generated = ev->res.gen.n_generated;
        }
        pt_ui_event_free(ev);
        if (done) return s;
    }
}

static void send_turn(int turn_id, const pt_chat_settings *set) {
    pt_chat_message msg = {"user", "Tell me a long story about the sea."};
    CHECK(pt_worker_turn(&w, turn_id, &msg, 1, set), "turn %d sent", turn_id);
}

static void expect_cancelled(int turn_id) {
    turn_seen s = wait_turn(turn_id);
    CHECK(s.status == PT_OK, "turn %d: status %s", turn_id, pt_status_name(s.status));
    CHECK(s.stop == PT_STOP_CANCELLED, "turn %d: stop reason %d, want cancelled", turn_id, (int)s.stop);
    CHECK(s.n_text == 0 && s.n_generated == 0, "turn %d: cancelled before it started, yet %d chunks, %d tokens",
          turn_id, s.n_text, s.n_generated);
}

static void expect_ran(int turn_id, int n_predict) {
    turn_seen s = wait_turn(turn_id);
    CHECK(s.status == PT_OK, "turn %d: status %s", turn_id, pt_status_name(s.status));
    CHECK(s.stop != PT_STOP_CANCELLED, "turn %d was cancelled by a cancel meant for earlier turns", turn_id);
    /* the tiny model is random: it may end early, but never overrun */
    CHECK(s.n_generated >= 1 && s.n_generated <= n_predict, "turn %d: %d tokens", turn_id, s.n_generated);
}

/* The card's device strings come from the OpenCL driver: escaped for the
 * screen like the model's own strings. */
static void card_device(void) {
    pt_model_info info;
    memset(&info, 0, sizeof info);
    info.device = "Evil\x1b[2J GPU";
    info.n_device_layers = 30;
    info.device_note = "bell\x07";
    pt_model_card c;
    pt_model_card_from_info(&c, &info);
    CHECK(strcmp(c.device, "Evil\\e[2J GPU") == 0, "device escaped: '%s'", c.device);
    CHECK(strcmp(c.device_note, "bell\\x07") == 0, "device_note escaped: '%s'", c.device_note);
    CHECK(c.n_device_layers == 30, "n_device_layers %d", c.n_device_layers);
    info.device = NULL;   /* (an engine that names none) */
    pt_model_card_from_info(&c, &info);
    CHECK(strcmp(c.device, "CPU") == 0, "no device name: '%s'", c.device);
}

int main(void) {
    card_device();
    pt_chat_settings set;
    pt_chat_settings_default(&set);
    set.n_predict = 16;
    CHECK(pt_queue_init(&events, false), "event queue");
    CHECK(pt_worker_start(&w, &events, 256, 1), "worker started");

    /* Esc while the model still loads: turn 1 waits behind the load, and
     * the cancel made meanwhile must still stop it */
    pthread_mutex_lock(&events.mu);
    CHECK(pt_worker_load(&w, 1, test_data("tiny_llama.gguf")), "load sent");
    send_turn(1, &set);
    pt_worker_cancel(&w, 1);
    pthread_mutex_unlock(&events.mu);
    expect_cancelled(1);

    /* a cancel names its turns: the next turn runs in full */
    send_turn(2, &set);
    expect_ran(2, set.n_predict);

    /* "all turns up to N": two turns queued behind a busy worker (a
     * memory report it cannot post yet), both cancelled by one call; a
     * cancel for turns that were never sent is harmless */
    pthread_mutex_lock(&events.mu);
    pt_worker_mem(&w);
    send_turn(3, &set);
    send_turn(4, &set);
    pt_worker_cancel(&w, 4);
    pt_worker_cancel(&w, 2);   /* an older id does not undo anything */
    pthread_mutex_unlock(&events.mu);
    expect_cancelled(3);
    expect_cancelled(4);
    send_turn(5, &set);
    expect_ran(5, set.n_predict);

    CHECK(pt_worker_stop(&w, 30.0), "worker stopped");
    pt_qnode *n;
    while ((n = pt_queue_pop(&events))) pt_ui_event_free((pt_ui_event *)n);
    pt_queue_destroy(&events, NULL);
    return check_done("ui_worker");
}
