/* queue.c — thread-safe FIFO with a self-pipe for poll() (see queue.h). */
#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

bool pt_queue_init(pt_queue *q, bool with_fd) {
    q->head = q->tail = NULL;
    q->count = 0;
    q->closed = false;
    q->wake_rd = q->wake_wr = -1;
    if (with_fd) {
        int fds[2];
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
        q->wake_rd = fds[0];
        q->wake_wr = fds[1];
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    return true;
}

void pt_queue_destroy(pt_queue *q, void (*free_item)(pt_qnode *)) {
    pt_qnode *it = q->head;
    while (it) {
        pt_qnode *next = it->next;
        if (free_item) free_item(it);
        it = next;
    }
    q->head = q->tail = NULL;
    if (q->wake_rd >= 0) close(q->wake_rd);
    if (q->wake_wr >= 0) close(q->wake_wr);
    q->wake_rd = q->wake_wr = -1;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void pt_queue_push(pt_queue *q, pt_qnode *item) {
    item->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->next = item; else q->head = item;
    q->tail = item;
    q->count++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (q->wake_wr >= 0) {
        /* A full pipe (EAGAIN) already wakes the reader: nothing lost. */
        char b = 1;
        ssize_t r;
        do r = write(q->wake_wr, &b, 1); while (r < 0 && errno == EINTR);
    }
}

static pt_qnode *pop_locked(pt_queue *q) {
    pt_qnode *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head) q->tail = NULL;
        q->count--;
        it->next = NULL;
    }
    return it;
}

pt_qnode *pt_queue_pop(pt_queue *q) {
    pthread_mutex_lock(&q->mu);
    pt_qnode *it = pop_locked(q);
    pthread_mutex_unlock(&q->mu);
    return it;
}

pt_qnode *pt_queue_wait(pt_queue *q) {
    pthread_mutex_lock(&q->mu);
    while (!q->head && !q->closed) pthread_cond_wait(&q->cv, &q->mu);
    pt_qnode *it = pop_locked(q);
    pthread_mutex_unlock(&q->mu);
    return it;
}

void pt_queue_close(pt_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int pt_queue_fd(const pt_queue *q) { return q->wake_rd; }

void pt_queue_drain_fd(pt_queue *q) {
    if (q->wake_rd < 0) return;
    char buf[256];
    while (read(q->wake_rd, buf, sizeof buf) > 0) {}
}
