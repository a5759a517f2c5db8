/*
 * queue.h — a FIFO of messages between threads.
 *
 * Any thread pushes; one thread pops. The consumer either blocks on the
 * condition variable (pt_queue_wait: the engine worker waiting for
 * commands) or polls the wake fd together with the terminal (the UI: the
 * fd becomes readable when something was pushed; pt_queue_drain_fd
 * empties it). The queue owns nothing inside the items: pushing hands the
 * item to the consumer, which frees it.
 */
#ifndef PETREL_UI_QUEUE_H
#define PETREL_UI_QUEUE_H

#include <pthread.h>
#include <stdbool.h>

/* Items embed this as their first member. */
typedef struct pt_qnode {
    struct pt_qnode *next;
} pt_qnode;

typedef struct pt_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pt_qnode *head, *tail;
    int count;
    int wake_rd, wake_wr;   /* self-pipe, both ends non-blocking; -1 when not made */
    bool closed;
} pt_queue;

/* with_fd: also make the self-pipe for poll(). Returns false on failure. */
bool pt_queue_init(pt_queue *q, bool with_fd);
/* Frees the pipe; items still queued are handed to free_item (may be NULL). */
void pt_queue_destroy(pt_queue *q, void (*free_item)(pt_qnode *));

void pt_queue_push(pt_queue *q, pt_qnode *item);
/* Next item or NULL when empty (never blocks). */
pt_qnode *pt_queue_pop(pt_queue *q);
/* Next item; blocks while empty. NULL once the queue is closed and empty. */
pt_qnode *pt_queue_wait(pt_queue *q);
/* Wake every waiter; later waits on an empty queue return NULL. */
void pt_queue_close(pt_queue *q);

int pt_queue_fd(const pt_queue *q);
/* Read and discard the wake bytes (call before popping, so a push that
 * lands after the pops still leaves the fd readable). */
void pt_queue_drain_fd(pt_queue *q);

#endif
