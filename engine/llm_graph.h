/*
 * llm_graph.h — the decoder written against the op table of backend.h,
 * for a model whose layers run on a device (OpenCL), with any layer the
 * device cannot run on the CPU device. Internal to the engine.
 *
 * Placement: each layer runs wholly on one device, its weights uploaded
 * there once at pt_llm_place (or used in place on unified memory) and
 * never moved. Its KV cache lives on the same device. Between two layers
 * on different devices only the residual stream x ([n][E]) crosses, once
 * per chunk. The token embedding lookup and the logits' soft-capping run
 * on the host; the output norm and matrix on the output's device.
 *
 * A model with a graph runs through it: llm_forward.c hands a state and
 * its forward calls here (pt_llm_forward's contract holds, except that
 * results depend on the device's summation order: close to the CPU path's,
 * not bitwise).
 */
#ifndef PETREL_LLM_GRAPH_H
#define PETREL_LLM_GRAPH_H

#include "backend.h"
#include "llm.h"

typedef struct pt_llm_graph pt_llm_graph;
typedef struct pt_graph_state pt_graph_state;

/* Place m's layers: layer il on dev when on_dev[il] (and dev has kernels
 * for all its matrix types and its head size; else the CPU), the others on
 * the CPU; the output on dev when out_on_dev (and its type has a kernel). Takes dev
 * (closed with the model, or here on failure). Weights are uploaded now. */
pt_status pt_llm_place(pt_llm *m, pt_device *dev, const bool *on_dev, bool out_on_dev, pt_error *err);
/* pt_llm_place with the last n layers (n < 0: all) and the output on dev. */
pt_status pt_llm_place_last(pt_llm *m, pt_device *dev, int n, pt_error *err);
void pt_llm_graph_free(pt_llm_graph *g);
/* The model's graph, or NULL (the CPU fast path). */
const pt_llm_graph *pt_llm_graph_of(const pt_llm *m);
/* Layers on the device, and its name. */
int pt_llm_graph_device_layers(const pt_llm_graph *g);
const char *pt_llm_graph_device_name(const pt_llm_graph *g);

pt_status pt_graph_state_new(const pt_llm *m, int n_ctx, int n_batch, pt_graph_state **out,
                             pt_error *err);
void pt_graph_state_free(pt_graph_state *s);
uint64_t pt_graph_kv_bytes(const pt_graph_state *s);
/* One chunk of n <= n_batch tokens at positions p0.. (checked by the
 * caller): logits of every token into all_logits ([n][V]) and/or the
 * last one's into last_logits, as pt_llm_forward. */
pt_status pt_graph_forward(const pt_llm *m, pt_graph_state *s, const pt_token *tokens, int n, int p0,
                           float *all_logits, float *last_logits, pt_error *err);

#endif
