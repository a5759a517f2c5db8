/*
 * test_ui_queue.c — the UI's thread-safe FIFO (ui/queue.c): several
 * producer threads against one consumer that sleeps in poll() on the wake
 * fd, as the UI does; nothing lost, per-producer order kept, the fd wakes
 * the consumer, and a blocking waiter is released by close.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "../ui/queue.c"

#define PRODUCERS 4
#define PER_PRODUCER 20000

typedef struct item {
    pt_qnode node;
    int producer, seq;
} item;

static pt_queue q;

static void free_item(pt_qnode *n) { free(n); }

static void *producer(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        item *it = malloc(sizeof *it);
        it->producer = id;
        it->seq = i;
        pt_queue_push(&q, &it->node);
        if (i % 1000 == 0) sched_yield();
    }
    return NULL;
}

static void test_many_producers(void) {
    CHECK(pt_queue_init(&q, true), "init with fd");
    pthread_t th[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i);
    int next[PRODUCERS] = {0};
    int got = 0, out_of_order = 0, polls = 0, timeouts = 0;
    while (got < PRODUCERS * PER_PRODUCER) {
        struct pollfd p = {.fd = pt_queue_fd(&q), .events = POLLIN};
        /* the consumer must never miss a wake-up: a long timeout that
         * expires while items are pending would show as a timeout */
        int r = poll(&p, 1, 5000);
        polls++;
        if (r == 0) { timeouts++; break; }
        pt_queue_drain_fd(&q);
        pt_qnode *n;
        while ((n = pt_queue_pop(&q))) {
            item *it = (item *)n;
            if (it->seq != next[it->producer]) out_of_order++;
            next[it->producer] = it->seq + 1;
            got++;
            free(it);
        }
    }
    for (int i = 0; i < PRODUCERS; i++) pthread_join(th[i], NULL);
    CHECK(timeouts == 0, "consumer was not woken (%d timeouts)", timeouts);
    CHECK(got == PRODUCERS * PER_PRODUCER, "received %d of %d", got, PRODUCERS * PER_PRODUCER);
    CHECK(out_of_order == 0, "%d items out of order", out_of_order);
    CHECK(pt_queue_pop(&q) == NULL, "empty at the end");
    /* after draining, the fd is not readable until the next push */
    pt_queue_drain_fd(&q);
    struct pollfd p = {.fd = pt_queue_fd(&q), .events = POLLIN};
    CHECK(poll(&p, 1, 0) == 0, "fd quiet when nothing was pushed");
    item *it = malloc(sizeof *it);
    pt_queue_push(&q, &it->node);
    CHECK(poll(&p, 1, 0) == 1, "fd readable after a push");
    pt_queue_destroy(&q, free_item);
}

static pt_queue wq;
static void *waiter(void *arg) {
    (void)arg;
    return pt_queue_wait(&wq);
}

static void test_wait_and_close(void) {
    CHECK(pt_queue_init(&wq, false), "init without fd");
    CHECK(pt_queue_fd(&wq) == -1, "no fd");
    pthread_t th;
    /* a waiter gets a pushed item */
    pthread_create(&th, NULL, waiter, NULL);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    item *it = malloc(sizeof *it);
    it->seq = 7;
    pt_queue_push(&wq, &it->node);
    void *res;
    pthread_join(th, &res);
    CHECK(res == it && ((item *)res)->seq == 7, "waiter got the item");
    free(res);
    /* a waiter on an empty queue is released by close */
    pthread_create(&th, NULL, waiter, NULL);
    nanosleep(&ts, NULL);
    pt_queue_close(&wq);
    pthread_join(th, &res);
    CHECK(res == NULL, "close releases the waiter with NULL");
    /* items left at destroy are handed to the free function */
    for (int i = 0; i < 3; i++) pt_queue_push(&wq, &((item *)calloc(1, sizeof(item)))->node);
    CHECK(wq.count == 3, "count 3");
    pt_queue_destroy(&wq, free_item);
}

int main(void) {
    test_many_producers();
    test_wait_and_close();
    return check_done("ui_queue");
}
